"""What the GitHub Actions runner does with the files a step writes, for tests: parse GITHUB_OUTPUT the way
actions/runner's SetOutputFileCommand does (`name=value` lines, `name<<DELIMITER` heredocs), and read back the
workflow command lines a step printed."""

from __future__ import annotations

import re
from pathlib import Path

_COMMAND = re.compile(r"^::(?P<name>[a-zA-Z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def parse_outputs(path: Path) -> dict[str, str]:
    """The outputs the runner would read from `path`; a heredoc without its closing delimiter is an error."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    outputs: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        heredoc = line.find("<<")
        equals = line.find("=")
        if heredoc > 0 and (equals < 0 or heredoc < equals):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            body: list[str] = []
            while index < len(lines) and lines[index] != delimiter:
                body.append(lines[index])
                index += 1
            if index >= len(lines):
                raise ValueError(f"heredoc of {name!r} never closes with {delimiter!r}")
            index += 1
            outputs[name] = "\n".join(body)
        elif equals > 0:
            outputs[line[:equals]] = line[equals + 1 :]
        else:
            raise ValueError(f"not an output line: {line!r}")
    return outputs


def _unescape(value: str, *, prop: bool) -> str:
    if prop:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """(command, properties, message) of one workflow command line, unescaped as the runner does."""
    found = _COMMAND.match(line)
    if found is None:
        raise ValueError(f"not a workflow command: {line!r}")
    props: dict[str, str] = {}
    for pair in filter(None, (found["props"] or "").split(",")):
        key, _, value = pair.partition("=")
        props[key] = _unescape(value, prop=True)
    return found["name"], props, _unescape(found["data"], prop=False)
