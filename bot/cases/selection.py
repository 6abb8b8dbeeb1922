"""Which cases of a suite a run takes: by tag and by id (or glob)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from bot.cases.model import Case


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
