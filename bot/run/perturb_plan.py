"""What each perturbed copy of a database changes: the targets found in the suite's golds on that database
(bot/scoring/perturb_targets.py) spread over the copies, each copy a different mix of kinds and variants, so that
together they hold a boundary value at, below and above each constant, NULLs, duplicates, rows without a join
partner, ties at both ends of each ORDER BY key and dates at period edges. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bot.db.perturb_changes import Change
from bot.scoring.perturb_targets import Target, boundary_values, perturb_targets

POOL_MIN = 4  # copies built per database, at least: the distillation picks each case's K among them
MAX_CHANGES = 120  # per copy: enough for a suite's golds on one database, bounded build time
# The kinds each copy applies, in turn: every kind appears in at least two of any four consecutive copies.
_MIXES: tuple[frozenset[str], ...] = (
    frozenset({"boundary", "duplicate", "orphan", "period"}),
    frozenset({"null", "tie", "boundary"}),
    frozenset({"boundary", "duplicate", "period", "tie"}),
    frozenset({"orphan", "null", "boundary", "period"}),
)
_IN_PLACE = frozenset({"set", "null", "tie", "period"})
_PERIOD_EDGES = ("month_start", "month_end", "year_start", "year_end", "day_start", "day_end")


def pool_size(k: int) -> int:
    return max(k, POOL_MIN) if k > 0 else 0


def _variant(copy: int) -> int:
    """Which of a kind's values (boundary step, period edge, tie end) a copy takes: copies of the same mix differ."""
    return copy // len(_MIXES) + copy


# table -> (its join column, the other table, that one's column)
Joins = dict[str, list[tuple[str, str, str]]]


def _joins(targets: tuple[Target, ...]) -> Joins:
    """A gold's joins, from its orphan targets: each table's join columns and their partners."""
    out: Joins = {}
    for t in targets:
        if t.kind == "orphan" and t.column and t.partner:
            out.setdefault(t.table, []).append((t.column, *t.partner))
    return out


def _families(t: Target, copy: int, joins: Joins) -> Iterable[Change]:
    """With the orphans: a new row at a boundary (or NULL) joined to a new partner row, so a group whose only
    row sits at the boundary exists (an empty group once a filter is applied)."""
    if "orphan" not in _MIXES[copy % len(_MIXES)] or t.kind not in ("boundary", "null") or not t.column:
        return
    variant = _variant(copy)
    values = boundary_values(t.value, t.kind) if t.kind == "boundary" and t.value else ("NULL",)
    for partner in joins.get(t.table, ())[:2]:
        if values:
            value = values[variant % len(values)]
            yield Change("family", t.table, t.column, value, t.where, partner=partner)


def _changes(t: Target, copy: int, joins: Joins) -> Iterable[Change]:
    yield from _families(t, copy, joins)
    for change in _kind_changes(t, copy):
        # Copies 2, 3, 6, 7... change rows in place, the others add changed copies of rows (real rows kept):
        # every kind of _MIXES appears in both forms within four copies.
        yield replace(change, in_place=copy // 2 % 2 == 1) if change.action in _IN_PLACE else change


def _kind_changes(t: Target, copy: int) -> Iterable[Change]:
    if t.kind not in _MIXES[copy % len(_MIXES)]:
        return
    variant = _variant(copy)
    if t.kind == "boundary" and t.column and t.value:
        values = boundary_values(t.value, t.kind)
        if values:
            yield Change("set", t.table, t.column, values[variant % len(values)], t.where)
    elif t.kind == "period" and t.column:
        if t.value:
            values = boundary_values(t.value, t.kind)
            if values:
                yield Change("set", t.table, t.column, values[variant % len(values)], t.where)
        yield Change("period", t.table, t.column, _PERIOD_EDGES[variant % len(_PERIOD_EDGES)], t.where)
    elif t.kind == "null" and t.column:
        # A copied row with the NULL and new text: a group of its own holding only the NULL (copy 1, 5, ...).
        yield Change("null", t.table, t.column, "distinct" if copy % 4 == 1 else None, t.where)
    elif t.kind == "duplicate":
        yield Change("duplicate", t.table, None, None, t.where)
    elif t.kind == "orphan" and t.column:
        yield Change("orphan", t.table, t.column, "distinct" if variant % 2 == 0 else None, t.where)
    elif t.kind == "tie" and t.column:
        yield Change("tie", t.table, t.column, "min" if variant % 2 == 0 else "max", t.where)


def golds_targets(golds: Iterable[str]) -> list[tuple[Target, ...]]:
    return [perturb_targets(g) for g in golds]


def copy_plans(targets: list[tuple[Target, ...]], copies: int) -> list[list[Change]]:
    """`copies` plans. Each gold's targets are taken in turn (one of each gold, then the next of each), so that
    every gold keeps changes aimed at it when a copy reaches MAX_CHANGES."""
    plans: list[list[Change]] = []
    for copy in range(copies):
        seen: set[Change] = set()
        plan: list[Change] = []
        depth = max((len(ts) for ts in targets), default=0)
        joins = [_joins(ts) for ts in targets]
        for level in range(depth):
            for ts, js in zip(targets, joins, strict=True):
                if level < len(ts):
                    for ch in _changes(ts[level], copy, js):
                        if ch not in seen and len(plan) < MAX_CHANGES:
                            seen.add(ch)
                            plan.append(ch)
        plans.append(plan)
    return plans
