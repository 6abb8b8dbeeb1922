"""Tie logic on fetched rows (pure): does the cut of an ordered result choose between rows whose sort keys are
equal but whose outputs differ? Then the gold's answer depends on an order the data does not fix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Row = Sequence[Any]


@dataclass(frozen=True)
class Tie:
    """A group of rows with equal sort keys that a boundary of the window splits: some kept, some left out, and
    their outputs differ (another valid run of the gold could return the others)."""

    boundary: str  # "limit" (the end of the window), "offset" (its start) or "distinct on"
    kept: tuple[tuple[Any, ...], ...]
    left_out: tuple[tuple[Any, ...], ...]
    key: tuple[Any, ...]


def _mark(value: Any) -> str:
    return repr(value)


def _outputs_differ(rows: Sequence[Row], n_out: int) -> bool:
    return len({tuple(_mark(v) for v in r[:n_out]) for r in rows}) > 1


def _group(rows: Sequence[Row], at: int, key_of) -> range:
    """The run of rows around index `at` with the same key (rows are in key order)."""
    key = key_of(rows[at])
    lo, hi = at, at + 1
    while lo > 0 and key_of(rows[lo - 1]) == key:
        lo -= 1
    while hi < len(rows) and key_of(rows[hi]) == key:
        hi += 1
    return range(lo, hi)


def split_ties(
    rows: Sequence[Row], *, n_out: int, key_cols: Sequence[int], start: int, stop: int
) -> list[Tie]:
    """Ties that a window [start, stop) of `rows` (ordered by the columns `key_cols`) cuts. With no key columns
    (a LIMIT with no ORDER BY) every row ties with every other."""

    def key_of(row: Row) -> tuple[Any, ...]:
        return tuple(_mark(row[i]) for i in key_cols)

    ties: list[Tie] = []
    for boundary, inside, outside in (("limit", stop - 1, stop), ("offset", start, start - 1)):
        if not (0 <= outside < len(rows)) or not (start <= inside < min(stop, len(rows))):
            continue
        if key_of(rows[inside]) != key_of(rows[outside]):
            continue
        group = _group(rows, inside, key_of)
        members = [rows[i] for i in group]
        if not _outputs_differ(members, n_out):
            continue
        kept = tuple(tuple(rows[i][:n_out]) for i in group if start <= i < stop)
        left = tuple(tuple(rows[i][:n_out]) for i in group if not start <= i < stop)
        ties.append(
            Tie(boundary=boundary, kept=kept, left_out=left, key=tuple(rows[inside][i] for i in key_cols))
        )
    return ties


def distinct_on_ties(rows: Sequence[Row], *, n_out: int, n_distinct: int, n_keys: int) -> list[Tie]:
    """DISTINCT ON keeps the first row of each group of equal DISTINCT ON values; a tie is a group whose first rows
    have equal ORDER BY keys and different outputs (`rows`: outputs, then the DISTINCT ON values, then the keys,
    in the gold's order; with no ORDER BY, every row of a group ties)."""
    on = slice(n_out, n_out + n_distinct)
    keys = slice(n_out + n_distinct, n_out + n_distinct + n_keys)

    def marks(values: Sequence[Any]) -> tuple[str, ...]:
        return tuple(_mark(v) for v in values)

    groups: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(marks(row[on]), []).append(row)
    ties: list[Tie] = []
    for members in groups.values():
        first_key = marks(members[0][keys])
        tied = [r for r in members if marks(r[keys]) == first_key]
        if len(tied) > 1 and _outputs_differ(tied, n_out):
            ties.append(
                Tie(
                    boundary="distinct on",
                    kept=(tuple(tied[0][:n_out]),),
                    left_out=tuple(tuple(r[:n_out]) for r in tied[1:]),
                    key=tuple(members[0][on]),
                )
            )
    return ties
