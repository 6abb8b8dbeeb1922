"""Which cases of a suite a run takes: by tag and by id (or glob), and by shard (`run --shard I/N` takes the
cases whose id hashes to shard I)."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.base.errors import ConfigError
from bot.cases.model import Case

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def select_cases(
    cases: Iterable[Case], *, tags: list[str] | None = None, ids: list[str] | None = None
) -> list[Case]:
    """Filter by tags (any match) and by ids (exact id, or a glob such as `shop-ads-*`)."""
    out = []
    for case in cases:
        if tags and not set(tags) & set(case.tags):
            continue
        if ids and not any(case.id == i or fnmatch.fnmatchcase(case.id, i) for i in ids):
            continue
        out.append(case)
    return out


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    match = _SHARD.fullmatch(text or "")
    if not match:
        raise ConfigError(f"--shard expects I/N (for example 2/4), got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"--shard {text}: I must be between 1 and N, and N at least 1")
    return Shard(index, count)


def shard_of(case_id: str, count: int) -> int:
    """The shard (1-based) a case belongs to: a stable hash of its id alone, the same on every machine."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(case_id: str, shard: Shard) -> bool:
    return shard_of(case_id, shard.count) == shard.index


def split_tags(text: str | None) -> tuple[str, ...]:
    """`--tags a, b` as ("a", "b"): comma-separated, blanks dropped."""
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())
