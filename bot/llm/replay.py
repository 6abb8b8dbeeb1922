"""Replay files: scripted LLM replies, so `--agent llm`, `--llm-judge` and `sqlcanary repair` run with no key and
no model. The shipped server (bot.llm.replay_server) answers chat-completion requests from one.

    # benchmarks/shop/llm/repair-walkthrough.yml
    replies:
      - kind: repair                 # repair | critique | agent | judge | chat (bot.llm.replay_request)
        contains: kb/metrics/dau.yaml  # every text given must be in the prompt
        reply:                       # a mapping is sent as JSON; a string as it is
          status: updated
          actions: [...]
      - kind: critique
        reply: {status: perfect, actions: []}

Matchers (all optional; an entry with none matches every request): `kind`, `case` (an id or a list),
`attempt`, `question`, `contains` (a text or a list), `reask`. `times: N` uses an entry N times at most.
`error: {status, message}` answers with an HTTP error instead of `reply`. The first entry that matches wins.
A bad file is a ConfigError naming file:line; a request no entry matches is answered with HTTP 404 and a
message naming the request's kind and case, which the client turns into LLMUnavailable (exit 2)."""

from __future__ import annotations

import difflib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from bot.base.errors import ConfigError, SqlcanaryError
from bot.base.results import FrozenModel
from bot.base.yamlread import LineDict, load_yaml_file
from bot.llm.replay_request import RequestInfo, describe

NO_MATCH_STATUS = 404


class ErrorReply(FrozenModel):
    status: int = Field(ge=400, le=599)
    message: str = "scripted error"


class Entry(FrozenModel):
    kind: Literal["repair", "critique", "agent", "judge", "chat"] | None = None
    case: str | list[str] | None = None
    attempt: int | None = Field(default=None, ge=1)
    question: str | None = None
    contains: str | list[str] | None = None
    reask: bool | None = None
    times: int | None = Field(default=None, ge=1)
    reply: str | dict[str, Any] | None = None
    error: ErrorReply | None = None

    def matches(self, info: RequestInfo) -> bool:
        if self.kind is not None and info.kind != self.kind:
            return False
        if self.case is not None:
            wanted = [self.case] if isinstance(self.case, str) else self.case
            if info.case not in wanted:
                return False
        if self.attempt is not None and info.attempt != self.attempt:
            return False
        if self.question is not None and " ".join(self.question.split()) != " ".join(
            (info.question or "").split()
        ):
            return False
        if self.reask is not None and info.reask != self.reask:
            return False
        texts = [self.contains] if isinstance(self.contains, str) else (self.contains or [])
        return all(t in info.text for t in texts)

    def content(self) -> str:
        if isinstance(self.reply, dict):
            return json.dumps(self.reply, ensure_ascii=False)
        return self.reply or ""


KEYS = tuple(Entry.model_fields)


@dataclass(frozen=True)
class Answer:
    """What the server sends: a completion (`status` 200, `content`) or an error (`status`, `message`)."""

    status: int
    content: str = ""
    message: str = ""
    line: int | None = None  # the entry's line in the file; None for a miss
    info: RequestInfo | None = None


class Replay:
    """The entries of one replay file; thread-safe (`times` counts are shared by every request)."""

    def __init__(self, path: str, entries: list[Entry], lines: list[int]) -> None:
        self.path = path
        self.entries = entries
        self.lines = lines
        self._used = [0] * len(entries)
        self._lock = threading.Lock()
        self.served: list[Answer] = []  # every answer, in order: `llm serve` prints them, tests read them

    @classmethod
    def load(cls, path: str | Path) -> Replay:
        return load_replay(path)

    def answer(self, request: dict) -> Answer:
        info = describe(request)
        with self._lock:
            for i, entry in enumerate(self.entries):
                if entry.times is not None and self._used[i] >= entry.times:
                    continue
                if entry.matches(info):
                    self._used[i] += 1
                    out = self._answer(entry, self.lines[i], info)
                    break
            else:
                out = Answer(NO_MATCH_STATUS, message=no_match_message(self.path, info), info=info)
            self.served.append(out)
        return out

    @staticmethod
    def _answer(entry: Entry, line: int, info: RequestInfo) -> Answer:
        if entry.error is not None:
            return Answer(entry.error.status, message=entry.error.message, line=line, info=info)
        return Answer(200, content=entry.content(), line=line, info=info)


def no_match_message(path: str, info: RequestInfo) -> str:
    hint = f"kind: {info.kind}" + (f", case: {info.case}" if info.kind == "repair" and info.case else "")
    return f"replay {path}: no reply matches this request ({info.label()}); add an entry with {hint}"


# ---- reading a file --------------------------------------------------------------------------------------------
def load_replay(path: str | Path) -> Replay:
    """The replay file at `path`, or a ConfigError naming file:line and what to write instead."""
    where = str(path)
    if not Path(path).is_file():
        raise ConfigError("no such replay file (a path relative to the current folder)", path=where)
    try:
        doc = load_yaml_file(path)
    except SqlcanaryError as exc:
        raise ConfigError(exc.message, path=where, line=exc.line) from None
    if not isinstance(doc, LineDict) or "replies" not in doc:
        raise ConfigError("a replay file is a mapping with a `replies:` list", path=where, line=1)
    unknown = [k for k in doc if k != "replies"]
    if unknown:
        raise ConfigError(
            f"unknown key `{unknown[0]}` (known: replies)", path=where, line=doc.line_of(unknown[0])
        )
    items = doc["replies"]
    if not isinstance(items, list):
        raise ConfigError("`replies` must be a list of entries", path=where, line=doc.line_of("replies"))
    entries: list[Entry] = []
    lines: list[int] = []
    for n, item in enumerate(items):
        line = item.line if isinstance(item, LineDict) else getattr(items, "line_of", lambda _: None)(n)
        entries.append(_entry(item, where, line))
        lines.append(line or 0)
    return Replay(where, entries, lines)


def _entry(item: Any, path: str, line: int | None) -> Entry:
    if not isinstance(item, LineDict):
        raise ConfigError("each reply is a mapping (kind, case, ..., reply)", path=path, line=line)
    for key in item:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise ConfigError(
                f"unknown key `{key}`: {hint}(known: {', '.join(KEYS)})", path=path, line=item.line_of(key)
            )
    if ("reply" in item) == ("error" in item):
        raise ConfigError("each entry needs exactly one of `reply` or `error`", path=path, line=line)
    try:
        return Entry.model_validate(dict(item))
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        got = item.get(key)
        raise ConfigError(
            f"`{key}`: {_say(err, key)}, got {got!r}", path=path, line=item.line_of(key) if key else line
        ) from None


def _say(err: Any, key: str) -> str:
    if key == "kind":
        return "one of repair, critique, agent, judge, chat"
    if key in ("attempt", "times"):
        return "a whole number from 1"
    if key in ("case", "contains"):
        return "a text or a list of texts"
    if key == "reply":
        return "a mapping (sent as JSON) or a text"
    if key == "error":
        return "a mapping {status: 400-599, message: text}"
    return str(err.get("msg", "invalid")).lower()
