"""YAML reading that remembers where every value sits (first and last line), so KB errors name file:line
and an agent can cite the exact lines it used."""

from __future__ import annotations

from typing import Any

import yaml

from bot.base.errors import CaseFileError


class SpanDict(dict):
    """A mapping with its own line span and the line span of each key's entry (1-based, inclusive)."""

    start: int = 0
    end: int = 0
    key_spans: dict[str, tuple[int, int]]

    def line_of(self, key: str) -> int:
        return self.key_spans.get(key, (self.start, self.end))[0]


class SpanList(list):
    start: int = 0
    end: int = 0
    item_spans: list[tuple[int, int]]

    def line_of(self, index: int) -> int:
        return self.item_spans[index][0] if 0 <= index < len(self.item_spans) else self.start


def _end_line(node: yaml.Node) -> int:
    """The last line holding a character of the node (block nodes end where the next token starts)."""
    mark = node.end_mark
    buffer = getattr(mark, "buffer", None)
    if not buffer:
        return mark.line + 1
    i = min(mark.pointer, len(buffer)) - 1
    while i > node.start_mark.pointer:
        if buffer[i] in " \t\r\n\0":
            i -= 1
            continue
        line_start = buffer.rfind("\n", 0, i) + 1
        if line_start > node.start_mark.pointer and buffer[line_start : i + 1].lstrip().startswith("#"):
            i = line_start - 1  # a comment line between this node and the next belongs to neither
            continue
        break
    return buffer.count("\n", 0, max(i, 0)) + 1


class _Loader(yaml.SafeLoader):
    pass


# Dates stay the strings the author wrote.
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct(loader: _Loader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out = SpanDict()
        out.start, out.end, out.key_spans = node.start_mark.line + 1, _end_line(node), {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                raise CaseFileError("mapping keys must be plain words", line=key_node.start_mark.line + 1)
            key = str(key)
            if key in out:
                raise CaseFileError(f"duplicate key {key!r}", line=key_node.start_mark.line + 1)
            out[key] = _construct(loader, value_node)
            out.key_spans[key] = (
                key_node.start_mark.line + 1,
                max(_end_line(value_node), key_node.start_mark.line + 1),
            )
        return out
    if isinstance(node, yaml.SequenceNode):
        items = SpanList(_construct(loader, child) for child in node.value)
        items.start, items.end = node.start_mark.line + 1, _end_line(node)
        items.item_spans = [(c.start_mark.line + 1, _end_line(c)) for c in node.value]
        return items
    return loader.construct_object(node, deep=True)


def load_spanned_yaml(text: str, path: str) -> Any:
    """Parse one YAML document; mappings and lists come back as SpanDict / SpanList."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _construct(loader, node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise CaseFileError(
            f"unparsable YAML: {exc.problem or exc}", path=path, line=mark.line + 1 if mark else None
        ) from exc
    except yaml.YAMLError as exc:
        raise CaseFileError(f"unparsable YAML: {exc}", path=path) from exc
    except CaseFileError as exc:
        exc.path = path
        raise
    finally:
        loader.dispose()


def line_at(doc: Any, loc: tuple[Any, ...], default: int = 1) -> int:
    """The line of the value at a pydantic error location (`("columns", 2, "name")`), as deep as it exists."""
    line = getattr(doc, "start", default) or default
    node = doc
    for part in loc:
        if isinstance(node, SpanDict) and str(part) in node:
            line = node.line_of(str(part))
            node = node[str(part)]
        elif isinstance(node, SpanList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.line_of(part)
            node = node[part]
        else:
            break
    return line
