"""Which mapped columns differ only by type (a date against a timestamp at midnight, numbers against the same
numbers as text), named with both PostgreSQL types for the first words of a mismatch's message: "12 of 12 rows
differ" hid that the values were equal but for their type.

Only the message depends on this: the verdict is decided before (VERDICTS.md: a date is not a timestamp at
midnight, a timestamp is not its text). The cost is bounded: at most `limit` rows of each side are read."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from bot.base.results import ResultSet
from bot.scoring.values import is_number, signature_value

MAX_ROWS = 10_000  # rows of each side examined
SHOWN = 2  # columns named in the message (details hold them all)

TYPE_NAMES = {
    16: "boolean",
    17: "bytea",
    18: '"char"',
    19: "name",
    20: "bigint",
    21: "smallint",
    23: "integer",
    25: "text",
    26: "oid",
    114: "json",
    700: "real",
    701: "double precision",
    705: "unknown",
    1042: "character",
    1043: "character varying",
    1082: "date",
    1083: "time",
    1114: "timestamp",
    1184: "timestamptz",
    1186: "interval",
    1266: "timetz",
    1700: "numeric",
    2950: "uuid",
    3802: "jsonb",
    1000: "boolean[]",
    1005: "smallint[]",
    1007: "integer[]",
    1009: "text[]",
    1014: "character[]",
    1015: "character varying[]",
    1016: "bigint[]",
    1021: "real[]",
    1022: "double precision[]",
    1115: "timestamp[]",
    1182: "date[]",
    1185: "timestamptz[]",
    1231: "numeric[]",
    199: "json[]",
    3807: "jsonb[]",
}
# Types whose values can meet under Python equality (1 = 1.0, 'a' = 'a'): a difference between two of one family
# is a difference of values, never of kind.
_FAMILIES = (
    frozenset({20, 21, 23, 26, 700, 701, 1700}),
    frozenset({18, 19, 25, 1042, 1043, 705}),
    frozenset({1114, 1184}),
    frozenset({1083, 1266}),
    frozenset({114, 3802}),
)


def type_name(oid: int) -> str:
    return TYPE_NAMES.get(oid, f"type oid {oid}")


def _family(oid: int) -> frozenset[int]:
    return next((f for f in _FAMILIES if oid in f), frozenset({oid}))


@dataclass(frozen=True)
class TypeNote:
    column: str
    gold_type: str
    pred_type: str

    def text(self) -> str:
        return (
            f"column `{self.column}`: the prediction returns {self.pred_type}, the gold {self.gold_type} "
            "(the values are equal once cast)"
        )

    def details(self) -> dict[str, Any]:
        return {"column": self.column, "gold": self.gold_type, "prediction": self.pred_type}


def _as_number(v: str) -> Decimal | None:
    """A finite number written as text ("NaN", "sNaN" and "Infinity" stay text: no float holds a signalling NaN)."""
    try:
        number = Decimal(v.strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _as_time(v: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(v.strip())
    except ValueError:
        return None


def cast(v: Any) -> Any:
    """A value in one representation shared by every type that can write it: a date as its midnight, a number
    or a date written as text as the number or the timestamp, other text as it is."""
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, dt.date):
        return dt.datetime.combine(v, dt.time())
    if isinstance(v, str):
        number = _as_number(v)
        if number is not None:
            return signature_value(number)
        return _as_time(v) or v
    return signature_value(v) if is_number(v) else v


def _same(gold: list[Any], pred: list[Any], read: Callable[[Any], Any], *, distinct: bool) -> bool:
    """Whether both columns hold the same values, each read by `read`, as often (under set semantics: at all)."""
    sides = []
    for values in ([read(v) for v in gold], [read(v) for v in pred]):
        try:
            counts = Counter(values)
        except TypeError:
            counts = Counter(repr(v) for v in values)
        sides.append(set(counts) if distinct else counts)
    return sides[0] == sides[1]


def type_notes(
    gold: ResultSet,
    pred: ResultSet,
    g: Sequence[tuple[Any, ...]],
    p: Sequence[tuple[Any, ...]],
    mapping: Sequence[int] | None,
    *,
    distinct: bool = False,
    limit: int = MAX_ROWS,
) -> tuple[TypeNote, ...]:
    """The gold columns (with the prediction's column `mapping` lines up with each) whose types are of different
    kinds and whose values differ, but agree once cast to one type; `g` and `p` are the normalised rows. None for
    a mapping that does not fit. `distinct`: set semantics, where how often a value occurs does not count."""
    if mapping is None or len(mapping) != len(gold.columns) or any(j >= len(pred.columns) for j in mapping):
        return ()
    g, p = g[:limit], p[:limit]
    notes = []
    for i, j in enumerate(mapping):
        go, po = gold.type_oids[i], pred.type_oids[j]
        if po in _family(go):
            continue
        gv, pv = [r[i] for r in g], [r[j] for r in p]
        differ = not _same(gv, pv, signature_value, distinct=distinct)
        if differ and _same(gv, pv, cast, distinct=distinct):
            notes.append(TypeNote(gold.columns[i], type_name(go), type_name(po)))
    return tuple(notes)


def by_name(gold: ResultSet, pred: ResultSet) -> tuple[int, ...] | None:
    """The prediction's column of each gold column's name, else of its position; None when one has neither."""
    names = {name: j for j, name in reversed(list(enumerate(pred.columns)))}
    found = [names.get(name, i if i < len(pred.columns) else None) for i, name in enumerate(gold.columns)]
    return None if any(j is None for j in found) else tuple(j for j in found if j is not None)


def with_lead(notes: Sequence[TypeNote], message: str) -> str:
    """`message` after the notes, or as it is without notes."""
    if not notes:
        return message
    text = "; ".join(n.text() for n in notes[:SHOWN])
    more = len(notes) - SHOWN
    text += f"; and {more} more column{'' if more == 1 else 's'} of another type" if more > 0 else ""
    return f"{text}; {message}"
