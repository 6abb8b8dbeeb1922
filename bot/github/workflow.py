"""Workflow commands (`::error::`, `::add-mask::`) and the runner's files (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY).

Pure functions on strings and paths: the caller prints the command lines and passes the file paths it read from the
environment. Escaping follows actions/runner (`%`, CR and LF in data; also `:` and `,` in properties), so a message
holding a newline or a case id with a colon cannot end a command early or forge another one.

`StepLog` is the step log as a whole: the runner reads every line of a step's stdout and stderr, a child's
included, as a possible command, so text that is not ours (case ids, file names, SQL, an agent's stderr, a
child's error) is printed between `::stop-commands::<token>` and `::<token>::` (a token random per fence, known to
no child), and each line we print ourselves has CR and LF escaped and cannot start a command. Our own commands
wait until the fence closes."""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, TextIO

from bot.base.textfilters import show_invisible

MAX_SUMMARY_BYTES = 1024 * 1024  # per step; over it the runner drops the summary with an error (limits.json)
MAX_OUTPUTS_BYTES = 1024 * 1024  # per job
_OUTPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_SUMMARY_CUT = "\n\n… (summary truncated at GitHub's 1 MiB limit; the full report is in the artifacts)\n"

OutputValue = str | int | float | bool | None


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def plain_line(text: str) -> str:
    """`text` as one log line the runner cannot read as a command: CR and LF shown as `\\r` and `\\n` (the
    runner splits lines at either), a leading `::` (after blanks, which it trims, or invisible characters) and
    any `##[` (the older command syntax, found anywhere in a line) broken with a backslash."""
    line = text.replace("\r", "\\r").replace("\n", "\\n").replace("##[", "##\\[")
    start = next((i for i, ch in enumerate(line) if not _blank(ch)), len(line))
    if line.startswith("::", start):
        line = line[:start] + "\\" + line[start:]
    return line


def _blank(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs")


def fence_token() -> str:
    """A `::stop-commands::` token: random, so no text inside the fence can end it."""
    return f"sqlcanary-{secrets.token_hex(16)}"


@dataclass
class StepLog:
    """Prints to the step log: `say` for plain lines, `command` for our workflow commands, `fenced()` around
    whatever may print text that is not ours (the fence also covers child processes writing to the same log)."""

    stream: TextIO
    new_token: Callable[[], str] = fence_token
    _token: str | None = field(default=None, init=False)
    _waiting: list[str] = field(default_factory=list, init=False)

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def say(self, text: str) -> None:
        """One line of text, whatever it holds (escaped by `plain_line`)."""
        self._print(plain_line(text))

    def command(self, line: str) -> None:
        """A workflow command we built (`error(...)`, `notice(...)`): printed now, or when the fence closes."""
        if self._token is None:
            self._print(line)
        else:
            self._waiting.append(line)

    @contextmanager
    def fenced(self) -> Iterator[None]:
        """Commands stop for the block (a fence inside a fence is the same fence); ours are printed after it."""
        if self._token is not None:
            yield
            return
        self._token = self.new_token()
        self._print(f"::stop-commands::{self._token}")
        try:
            yield
        finally:
            self._print(f"::{self._token}::")
            self._token = None
            waiting, self._waiting = self._waiting, []
            for line in waiting:
                self._print(line)


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    """One workflow command line, e.g. `::error file=a.yml,line=3::boom`; None properties are left out."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _annotation(
    kind: Literal["error", "warning", "notice"],
    message: str,
    *,
    title: str | None = None,
    file: str | None = None,
    line: int | None = None,
    end_line: int | None = None,
    col: int | None = None,
    end_column: int | None = None,
) -> str:
    return command(
        kind, message, title=title, file=file, line=line, endLine=end_line, col=col, endColumn=end_column
    )


# `::error`, `::warning` and `::notice` annotations: message, then title/file/line/end_line/col/end_column.
error = partial(_annotation, "error")
warning = partial(_annotation, "warning")
notice = partial(_annotation, "notice")


def add_mask(value: str) -> list[str]:
    """`::add-mask::` lines for a secret, one per line of it: the runner masks log lines one at a time, so a
    multi-line secret (a PEM key) is only hidden when each of its lines is. Print them before anything else."""
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    return [f"::add-mask::{escape_data(line)}" for line in dict.fromkeys(lines)]


def _render_value(value: OutputValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def format_outputs(outputs: Mapping[str, OutputValue]) -> str:
    """GITHUB_OUTPUT lines: `name=value`, or a heredoc with a random delimiter when the value has a newline
    (CRLF becomes LF: the runner splits the file into lines, so a CR would not survive reliably anyway)."""
    parts = []
    for name, raw in outputs.items():
        if not _OUTPUT_NAME.match(name):
            raise ValueError(f"output name {name!r} must be letters, digits, '_' and '-'")
        value = _render_value(raw).replace("\r\n", "\n")  # the runner reads the file line by line
        if "\n" not in value and "\r" not in value:
            parts.append(f"{name}={value}\n")
            continue
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        while delimiter in value:  # a value cannot close its own heredoc
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        parts.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(parts)


def write_outputs(path: Path, outputs: Mapping[str, OutputValue]) -> None:
    """Append `outputs` to the GITHUB_OUTPUT file (the runner reads it after the step)."""
    text = format_outputs(outputs)
    existing = path.stat().st_size if path.exists() else 0
    if existing + len(text.encode("utf-8")) > MAX_OUTPUTS_BYTES:
        raise ValueError(
            f"outputs would exceed GitHub's {MAX_OUTPUTS_BYTES} bytes per job: write a file instead"
        )
    with path.open("a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


@dataclass(frozen=True)
class SummaryWrite:
    bytes_written: int
    truncated: bool


def append_summary(path: Path, text: str, *, limit: int = MAX_SUMMARY_BYTES) -> SummaryWrite:
    """Append Markdown to the job summary, keeping the file within `limit` bytes (GitHub drops a larger one).
    Bidi and zero-width controls are shown escaped (bot.base.textfilters.show_invisible), as in every report."""
    text = show_invisible(text)
    existing = path.stat().st_size if path.exists() else 0
    room = limit - existing
    data = text.encode("utf-8")
    truncated = len(data) > room
    if truncated:
        cut = _SUMMARY_CUT.encode("utf-8")
        if room < len(cut):
            return SummaryWrite(0, True)
        data = data[: room - len(cut)].decode("utf-8", errors="ignore").encode("utf-8") + cut
    with path.open("ab") as handle:
        handle.write(data)
    return SummaryWrite(len(data), truncated)
