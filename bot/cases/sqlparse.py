"""Each SQL text parsed once per process, and a gold that parsed once not parsed again to be loaded.

A case's gold is parsed when its file is loaded (bot.cases.fields refuses one that does not parse, and counts its
statements) and may be read again when it is judged (bot.scoring.order, for its ORDER BY): both take the trees
from `parsed`. The trees are shared: nothing may change them (copy first).

Loading only needs to know that a text parses and how many statements it holds. Within `remembered(folder)` (a
run's suite, bot.run.pipeline), that is kept across runs by content, in one JSON file per sqlglot version in the
cache, so a warm run parses none of its golds to load them (parsing was 45% of loading 6,704 cases)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from bot.base.results import write_json_atomic

CACHED = 8192  # texts; a suite's golds, and a run's predictions as the order check reads them
_MAX_MEMO_BYTES = 64 * 1024 * 1024


@lru_cache(maxsize=CACHED)
def parsed(sql: str) -> tuple[exp.Expr | None, ...]:
    """sqlglot's statements of `sql` (PostgreSQL); raises sqlglot's ParseError or TokenError (never cached)."""
    return tuple(sqlglot.parse(sql, read="postgres"))


class _Memo:
    """{digest of a text: its statement count} for texts that parsed, read from and written to `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.counts = _read(path)
        self.added = False

    def count(self, sql: str) -> int:
        key = hashlib.sha256(sql.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        if key not in self.counts:
            self.counts[key] = statements(sql)
            self.added = True
        return self.counts[key]


def _read(path: Path) -> dict[str, int]:
    try:
        if path.stat().st_size > _MAX_MEMO_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and type(v) is int and v > 0}


_MEMO: ContextVar[_Memo | None] = ContextVar("sqlcanary_parse_memo", default=None)


def statements(sql: str) -> int:
    """How many statements `sql` holds (raises as `parsed` does)."""
    return sum(tree is not None for tree in parsed(sql))


def statement_count(sql: str) -> int:
    """`statements(sql)`, from the memo when one is in use and has it."""
    memo = _MEMO.get()
    return memo.count(sql) if memo is not None else statements(sql)


@contextmanager
def remembered(folder: Path | None) -> Iterator[None]:
    """Within it, statement counts come from (and go to) the memo in `folder`; None: no memo."""
    if folder is None:
        yield
        return
    memo = _Memo(folder / f"sqlglot-{sqlglot.__version__}.json")
    token = _MEMO.set(memo)
    try:
        yield
    finally:
        _MEMO.reset(token)
        if memo.added:
            try:
                write_json_atomic(memo.path, json.dumps(memo.counts))
            except OSError:
                pass  # a cache: the next run parses again
