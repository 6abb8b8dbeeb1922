"""YAML loading that remembers line numbers, so errors can name file:line. A bottom-layer module: case files
(bot.cases) and sqlcanary.yml (bot.config.model) are both read with it. Parsed by libyaml when PyYAML was built
with it (its wheels are), by PyYAML's pure-Python parser otherwise: the same documents, lines and errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.base.errors import CaseFileError


class LineDict(dict):
    """A mapping that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list):
    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


# libyaml's parser where PyYAML has it (13-19x faster on a suite's files); the constructors below are Python's
# either way, so every mapping and list keeps its lines, and only the safe tags exist.
_SafeBase: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeBase):  # type: ignore[valid-type,misc]
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise CaseFileError("mapping keys must be scalars", line=key_node.start_mark.line + 1)
        key = str(key)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
# Keep timestamps and dates as the strings the author wrote: cases compare typed values from the database.
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml_text(text: str, path: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and "end of stream" in (exc.problem or ""):
            mark = exc.context_mark  # an unclosed quote or bracket: where it opened, not the end of the file
        line = mark.line + 1 if mark else None
        raise CaseFileError(f"unparsable YAML: {exc.problem or exc}", path=path, line=line) from exc
    except yaml.YAMLError as exc:
        raise CaseFileError(f"unparsable YAML: {exc}", path=path) from exc
    except CaseFileError as exc:
        exc.path = path
        raise


def read_text_file(path: str | Path) -> str:
    """A suite's text file, or a CaseFileError naming it (missing, not UTF-8)."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CaseFileError("no such file", path=str(p)) from exc
    except UnicodeDecodeError as exc:
        raise CaseFileError(f"not UTF-8 text: {exc.reason}", path=str(p)) from exc


def load_yaml_file(path: str | Path) -> Any:
    return load_yaml_text(read_text_file(path), str(path))
