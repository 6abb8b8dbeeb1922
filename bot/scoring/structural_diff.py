"""Comparing the parts of two normalised queries and naming the differences in a few short words.

The scorer (`bot.scoring.structural`) extracts each query's parts as SQL text; this module compares them part by
part, most important first (tables and joins, then filters, aggregates, grouping, ordering, limit), pairs a
missing item with the extra item it was replaced by, and writes a message that stays whole within a comment
cell: at most a few differences and `and N more`. A difference that only follows from an earlier one (every
column renamed because the table was, an output column that differs because its aggregate does) is not counted
again: the PR comment and the repair prompt must point at the edit, not at its echoes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

# The parts compared, most important first (the order of the message), and the name of one item of each.
PART_LABELS: dict[str, str] = {
    "statements": "statements",
    "statement": "statement kind",
    "set_operations": "set operations",
    "tables": "tables",
    "joins": "joins",
    "branches": "set operation branches",
    "ctes": "CTEs",
    "subqueries": "subqueries",
    "filters": "filters",
    "aggregates": "aggregates",
    "grouping": "grouping",
    "having": "having",
    "select": "select list",
    "distinct": "distinct",
    "ordering": "ordering",
    "limit": "limit",
    "body": "statement text",
}
PARTS: tuple[str, ...] = tuple(PART_LABELS)
ITEM_LABELS: dict[str, str] = {
    "statements": "statement",
    "statement": "statement",
    "set_operations": "set operation",
    "tables": "table",
    "joins": "join",
    "branches": "set operation branch",
    "ctes": "CTE",
    "subqueries": "derived table",
    "filters": "filter",
    "aggregates": "aggregate",
    "grouping": "grouping key",
    "having": "having condition",
    "select": "output column",
    "distinct": "DISTINCT",
    "ordering": "ordering key",
    "limit": "limit",
    "body": "statement",
}
MESSAGE_LIMIT = 300
MAX_SHOWN = 3
ITEM_WIDTH = 90
_RECURSIVE = {"statements", "branches", "ctes", "subqueries"}
_SUBSTITUTING = {
    "tables",
    "aggregates",
}  # a paired difference here is applied to the prediction's later parts
_MAX_DEPTH = 3
# A condition on tables both queries read at this level comes first: one on a table read elsewhere (a join
# written as IN (subquery)) follows from the join's difference.
_QUALIFIERS = re.compile(r"\b([a-z_][a-z0-9_$]*)\.[a-z_]")
_COLUMNS = re.compile(r"\b[a-z_][a-z0-9_$]*\.([a-z_][a-z0-9_$]*)\b")


@dataclass(frozen=True)
class Part:
    """One part of a query: its items as SQL text, plus named sub-queries for a recursive comparison."""

    items: tuple[str, ...]
    ordered: bool = False
    named: tuple[tuple[str, exp.Expr], ...] = ()


@dataclass(frozen=True)
class Difference:
    """One differing item: `missing` (gold only), `extra` (prediction only), `differs` (gold's item replaced
    by the prediction's) or `order` (same items, another order); `where` names the CTE or subquery it is in."""

    part: str
    change: str
    gold: str = ""
    pred: str = ""
    where: str = ""

    def as_dict(self) -> dict[str, str]:
        out = {"part": self.part, "change": self.change, "gold": self.gold, "pred": self.pred}
        return out | ({"in": self.where} if self.where else {})

    def describe(self) -> str:
        item = ITEM_LABELS[self.part]
        prefix = f"in {self.where}: " if self.where else ""
        if self.change in ("missing", "extra") and (self.gold or self.pred) == item:  # DISTINCT
            return (
                f"{prefix}{item} missing in prediction"
                if self.gold
                else f"{prefix}extra {item} in prediction"
            )
        if self.change == "missing":
            return f"{prefix}{item} missing in prediction: {_clip(self.gold)}"
        if self.change == "extra":
            return f"{prefix}extra {item} in prediction: {_clip(self.pred)}"
        if self.change == "order":
            return f"{prefix}{PART_LABELS[self.part]} in another order: gold {_clip(self.gold)}; prediction {_clip(self.pred)}"
        return f"{prefix}{item} differs: gold {_clip(self.gold)}, prediction {_clip(self.pred)}"


@dataclass(frozen=True)
class PartDiff:
    part: str
    gold: tuple[str, ...]
    pred: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    differences: tuple[Difference, ...]
    inner: tuple[str, tuple[PartDiff, ...]] | None = None  # (name, differences inside it)


Extract = Callable[[exp.Expr], dict[str, Part]]


def diff_parts(
    gold: dict[str, Part],
    pred: dict[str, Part],
    *,
    extract: Extract,
    depth: int = 0,
    renames: dict[str, str] | None = None,
) -> tuple[PartDiff, ...]:
    """The differing parts, in PARTS order. A table or aggregate the prediction replaced is renamed back in
    its later parts (`renames`: prediction text -> gold text), so its echoes are not reported again."""
    renames = dict(renames or {})
    diffs = []
    for name in PARTS:
        g, p = gold.get(name, Part(())), pred.get(name, Part(()))
        p = Part(tuple(_rename(i, renames) for i in p.items), p.ordered, p.named)
        if name == "ordering" and not g.items and not gold.get("limit", Part(())).items:
            continue  # gold without ORDER BY (nor LIMIT): any row order is right, the prediction's is noise
        same = g.items == p.items if (g.ordered or p.ordered) else Counter(g.items) == Counter(p.items)
        if same:
            continue
        missing, extra = _minus(g.items, p.items), _minus(p.items, g.items)
        inner = _inner(name, g, p, missing, extra, extract, depth, renames) if depth < _MAX_DEPTH else None
        if inner:
            label, inside = inner
            found = tuple(
                Difference(d.part, d.change, d.gold, d.pred, _join(_where(name, label), d.where))
                for part in inside
                for d in part.differences
            )
        else:
            found = _ranked(_pair(name, g, p, missing, extra), _shared(gold, pred))
        if name in _SUBSTITUTING:
            renames |= {d.pred: d.gold for d in found if d.change == "differs"}
        diffs.append(PartDiff(name, g.items, p.items, missing, extra, found, inner))
    return tuple(diffs)


def _rename(text: str, renames: dict[str, str]) -> str:
    for new, old in renames.items():
        if re.fullmatch(r"[a-z_][a-z0-9_$]*", new):  # a table: whole identifiers only
            text = re.sub(rf"\b{re.escape(new)}\b", old, text)
        else:
            text = text.replace(new, old)
    return text


def _minus(left: tuple[str, ...], right: tuple[str, ...]) -> tuple[str, ...]:
    return tuple((Counter(left) - Counter(right)).elements())


def _inner(
    name: str,
    g: Part,
    p: Part,
    missing: tuple,
    extra: tuple,
    extract: Extract,
    depth: int,
    renames: dict[str, str],
) -> tuple[str, tuple[PartDiff, ...]] | None:
    if name not in _RECURSIVE or len(missing) != 1 or len(extra) != 1:
        return None
    g_named = dict(zip(g.items, g.named, strict=False))
    p_named = {_rename(i, renames): n for i, n in zip(p.items, p.named, strict=False)}
    if missing[0] not in g_named or extra[0] not in p_named:
        return None
    (label, g_node), (_, p_node) = g_named[missing[0]], p_named[extra[0]]
    inner = diff_parts(extract(g_node), extract(p_node), extract=extract, depth=depth + 1, renames=renames)
    return (label, inner) if inner else None


def _pair(
    name: str, g: Part, p: Part, missing: tuple[str, ...], extra: tuple[str, ...]
) -> tuple[Difference, ...]:
    """Pair each missing item with the extra item that replaced it: same columns first, then a lone pair."""
    if not missing and not extra:
        return (Difference(name, "order", ", ".join(g.items), ", ".join(p.items)),)
    if g.ordered and len(g.items) == len(p.items) and len(missing) == len(extra):
        return tuple(
            Difference(name, "differs", a, b) for a, b in zip(g.items, p.items, strict=True) if a != b
        )
    left, right = list(missing), list(extra)
    pairs: list[Difference] = []
    for item in list(left):
        match = next((x for x in right if _key(name, item) and _key(name, item) == _key(name, x)), None)
        if match is not None:
            pairs.append(Difference(name, "differs", item, match))
            left.remove(item)
            right.remove(match)
    if len(left) == 1 and len(right) == 1 and _replaces(name, left[0], right[0]):
        pairs.append(Difference(name, "differs", left.pop(), right.pop()))
    pairs += [Difference(name, "missing", gold=i) for i in left]
    pairs += [Difference(name, "extra", pred=i) for i in right]
    return tuple(pairs)


def _replaces(name: str, gold: str, pred: str) -> bool:
    """A lone missing and a lone extra item are one change, unless two conditions on unrelated columns."""
    return name not in ("filters", "having") or bool(set(_key(name, gold)) & set(_key(name, pred)))


def _key(name: str, item: str) -> tuple[str, ...]:
    """The columns an item reads: a filter on the same columns is the same filter with another value. A table
    is keyed by its first word: `orders_archive` replaced `orders`."""
    if name == "tables":
        return (item.split("_")[0],)
    return tuple(sorted(set(_COLUMNS.findall(item))))


def _where(part: str, label: str) -> str:
    return {"ctes": f"CTE {label}", "subqueries": f"derived table {label}"}.get(part, label)


def _join(outer: str, inner: str) -> str:
    return f"{outer}, {inner}" if inner else outer


def differences(
    diffs: tuple[PartDiff, ...], gold: dict[str, Part], pred: dict[str, Part]
) -> tuple[Difference, ...]:
    """Every difference once (an aggregate both selected and ordered by is one change), those on the tables
    both queries read first: a join the prediction wrote as `IN (subquery)` and the conditions on the joined
    table only follow from the way it was written."""
    return _ranked(tuple(dict.fromkeys(d for diff in diffs for d in diff.differences)), _shared(gold, pred))


def _shared(gold: dict[str, Part], pred: dict[str, Part]) -> set[str]:
    return set(gold.get("sources", Part(())).items) & set(pred.get("sources", Part(())).items)


def _ranked(found: tuple[Difference, ...], shared: set[str]) -> tuple[Difference, ...]:
    return tuple(
        sorted(found, key=lambda d: not (d.where or set(_QUALIFIERS.findall(d.gold or d.pred)) <= shared))
    )


def message(found: tuple[Difference, ...], *, limit: int = MESSAGE_LIMIT) -> str:
    """The first few differences, whole, within `limit` characters; `and N more` for the rest."""
    shown: list[str] = []
    for number, difference in enumerate(found):
        text = difference.describe()
        rest = len(found) - number - 1
        tail = f"; and {rest} more" if rest else ""
        candidate = "; ".join([*shown, text])
        if len(shown) >= MAX_SHOWN or (shown and len(candidate) + len(tail) > limit):
            break
        shown.append(text)
    left = len(found) - len(shown)
    return "; ".join(shown) + (f"; and {left} more" if left else "")


def part_detail(diff: PartDiff) -> dict[str, Any]:
    out: dict[str, Any] = {k: list(getattr(diff, k)) for k in ("gold", "pred", "missing", "extra")}
    if diff.inner:
        out["inner"] = {"in": diff.inner[0], "parts": {d.part: part_detail(d) for d in diff.inner[1]}}
    return out


def _clip(text: str, width: int = ITEM_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
