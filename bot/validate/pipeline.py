"""`sqlcanary validate`: a config, its suite, its KB and its agent spec checked without a database or an agent,
every problem at once (bot.config.problems words them). A config with errors is still used for what it can say:
each of its top-level keys that validates on its own (the suite, the agent, `kb.paths`) is checked too."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.base.errors import ConfigError, SqlcanaryError
from bot.base.yamlread import LineDict, load_yaml_file
from bot.config.model import CONFIG_NAMES, HIDDEN_KEYS, Config, config_near, read_config
from bot.config.problems import Problem
from bot.validate.agent import agent_problems
from bot.validate.kb import kb_problems
from bot.validate.suite import problem_of, suite_problems


@dataclass
class Validation:
    config_file: Path
    suite: Path | None = None
    cases: int | None = None  # the suite's cases, when it has no problem
    kb_files: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


def locate_config(arg: str | None, cwd: Path) -> Path:
    """CONFIG as given (a file, or a folder holding sqlcanary.yml); else the nearest sqlcanary.yml from `cwd` up
    to the repository root."""
    if arg:
        given = Path(arg)
        if given.is_dir():
            found = next((given / n for n in CONFIG_NAMES if (given / n).is_file()), None)
            if found is None:
                raise ConfigError(f"no {' or '.join(CONFIG_NAMES)} in this folder", path=arg)
            return found
        if not given.is_file():
            raise ConfigError("no such config file", path=arg)
        return given
    found = config_near(cwd)
    if found is None:
        raise ConfigError(
            f"no sqlcanary.yml in {cwd} or in a folder above it (up to the repository root): "
            "give its path, or write one with `sqlcanary init`"
        )
    return found


def _salvage(path: Path) -> tuple[Config, LineDict | None]:
    """The parts of a config with errors that validate on their own (the rest left at the defaults)."""
    base: dict[str, Any] = {"base_dir": str(path.parent.resolve()), "config_file": str(path.resolve())}
    try:
        doc = load_yaml_file(path)
    except SqlcanaryError:
        return Config(**base), None
    if not isinstance(doc, LineDict):
        return Config(**base), None
    good: dict[str, Any] = {}
    for key, value in doc.items():
        if key in HIDDEN_KEYS:
            continue
        try:
            Config(**{key: value})
        except (ValidationError, TypeError):
            continue
        good[key] = value
    return Config(**good, **base), doc


def _agent_line(doc: LineDict | None) -> int | None:
    if doc is None or "agent" not in doc:
        return None
    agent = doc["agent"]
    return agent.line_of("spec") if isinstance(agent, LineDict) else doc.line_of("agent")


def validate(config_file: Path, *, suite: str | None = None) -> Validation:
    """Every problem of the config at `config_file`, the suite it names (or `suite`), its KB and its agent."""
    out = Validation(config_file=config_file)
    try:
        config, problems = read_config(config_file)
    except SqlcanaryError as exc:  # unreadable, unparsable, not a mapping: nothing more can be read
        out.problems.append(problem_of(exc))
        return out
    out.problems += problems
    usable, doc = (config, None) if config is not None else _salvage(config_file)
    if doc is None:
        doc = _doc(config_file)
    out.problems += agent_problems(usable, _agent_line(doc))
    location = Path(suite) if suite else (usable.path(usable.suite) if usable.suite else None)
    if location is None:
        line = doc.line if doc is not None else None
        message = "no `suite:` here: `sqlcanary run` then needs the suite as its argument"
        out.problems.append(Problem(str(config_file), line, "suite", message, severity="warning"))
    else:
        out.suite = location
        suite_found, out.cases = suite_problems(location)
        out.problems += suite_found
    kb_found, out.kb_files = kb_problems(usable)
    out.problems += kb_found
    out.problems = by_file(out.problems)
    return out


def by_file(problems: list[Problem]) -> list[Problem]:
    """Grouped by file (in the order the files were first named), by line within a file."""
    first: dict[str, int] = {}
    for p in problems:
        first.setdefault(p.path, len(first))
    return sorted(problems, key=lambda p: (first[p.path], p.line or 0))


def _doc(path: Path) -> LineDict | None:
    try:
        doc = load_yaml_file(path)
    except SqlcanaryError:
        return None
    return doc if isinstance(doc, LineDict) else None
