"""Read a step's log the way the GitHub Actions runner does (actions/runner ActionCommandManager): every line of
stdout and stderr is a possible workflow command, in the `::name props::data` syntax (after leading blanks) or
the older `##[name props]data` anywhere in the line; `::stop-commands::TOKEN` turns commands off until a line
`::TOKEN::`. `commands(log)` returns the commands the runner would act on, for tests that assert that no text
but ours speaks to the runner."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# What the runner acts on (anything else parses as plain text).
REGISTERED = frozenset(
    {
        "add-mask",
        "add-path",
        "set-env",
        "set-output",
        "save-state",
        "add-matcher",
        "remove-matcher",
        "warning",
        "error",
        "notice",
        "debug",
        "group",
        "endgroup",
        "echo",
        "stop-commands",
        "internal-set-repo-path",
    }
)
_LINES = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Command:
    name: str
    props: dict[str, str]
    data: str
    line: int  # 1-based line of the log


def _unescape(value: str, *, prop: bool) -> str:
    if prop:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _parse_v2(line: str) -> tuple[str, dict[str, str], str] | None:
    text = line.lstrip()
    if not text.startswith("::"):
        return None
    end = text.find("::", 2)
    if end < 0:
        return None
    info, data = text[2:end], text[end + 2 :]
    name, _, rest = info.partition(" ")
    props = {}
    for pair in filter(None, rest.split(",")):
        key, _, value = pair.partition("=")
        props[key] = _unescape(value, prop=True)
    return name, props, _unescape(data, prop=False)


def _parse_v1(line: str) -> tuple[str, dict[str, str], str] | None:
    start = line.find("##[")
    if start < 0:
        return None
    close = line.find("]", start)
    if close < 0:
        return None
    name, _, rest = line[start + 3 : close].partition(" ")
    props = {}
    for pair in filter(None, rest.split(";")):
        key, _, value = pair.partition("=")
        props[key] = value
    return name, props, line[close + 1 :]


@dataclass
class _State:
    stop_token: str | None = None
    done: list[Command] = field(default_factory=list)


def commands(log: str) -> list[Command]:
    """The commands the runner would act on, stop-commands and their resumes included, in order."""
    state = _State()
    for number, line in enumerate(_LINES.split(log), start=1):
        parsed = _parse_v2(line) or _parse_v1(line)
        if parsed is None:
            continue
        name, props, data = parsed
        if state.stop_token is not None:
            if name.lower() == state.stop_token.lower():
                state.done.append(Command(name, props, data, number))
                state.stop_token = None
            continue
        if name not in REGISTERED:
            continue
        state.done.append(Command(name, props, data, number))
        if name == "stop-commands":
            state.stop_token = data
    return state.done


def stopped_at_end(log: str) -> bool:
    """True when the log leaves commands off (a fence never closed: our last commands would be lost)."""
    open_token: str | None = None
    for cmd in commands(log):
        if cmd.name == "stop-commands":
            open_token = cmd.data
        elif open_token is not None and cmd.name.lower() == open_token.lower():
            open_token = None
    return open_token is not None
