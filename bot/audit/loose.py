"""Loose sameness of two results (pure): what separates gold alternatives written on purpose from alternatives
that contradict each other. Alternatives that return the same rows but for the format of a value (a month as
`2023-03`, `2023-03-01` or a midnight timestamp; a number's precision) are format variants; alternatives of which
one returns a subset of the other's rows (a LEFT JOIN's zero rows kept or not) are two readings of the question.
Only alternatives that are neither contradict each other."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

_DATE_TEXT = re.compile(
    r"^(\d{4})-(\d{2})(?:-(\d{2}))?(?:[ T]00:00(?::00(?:\.0+)?)?(?:[+-]00(?::?00)?|Z)?)?$"
)
_DIGITS = 6  # significant digits two numbers must share


def loose_value(value: Any) -> Any:
    """A value's meaning, not its format: a calendar day (or month, for a first of the month) as `YYYY-MM[-DD]`
    whatever type holds it, a number to _DIGITS significant digits, text stripped and in lower case."""
    if isinstance(value, dt.datetime):
        if value.time() != dt.time(0) or (value.utcoffset() or dt.timedelta(0)) != dt.timedelta(0):
            return value.isoformat()
        value = value.date()
    if isinstance(value, dt.date):
        return f"{value:%Y-%m}" if value.day == 1 else f"{value:%Y-%m-%d}"
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | decimal.Decimal):
        number = float(value)
        return float(f"{number:.{_DIGITS}g}")
    if isinstance(value, str):
        m = _DATE_TEXT.match(value.strip())
        if m:
            year, month, day = m.groups()
            return f"{year}-{month}" if day in (None, "01") else f"{year}-{month}-{day}"
        return value.strip().lower()
    return repr(value)


def _rows(rows: Sequence[Sequence[Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(loose_value(v) for v in row) for row in rows)


def loosely_equal(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> bool:
    """The same rows (as multisets, same width) once formats are set aside."""
    return _rows(a) == _rows(b)


def loosely_within(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> bool:
    """Every row of `a` is a row of `b` (as multisets, formats set aside): `a` is `b` read more narrowly."""
    ra, rb = _rows(a), _rows(b)
    return not (ra - rb)


def compatible(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> bool:
    """Format variants or one reading within the other: the alternatives do not contradict each other."""
    return loosely_within(a, b) or loosely_within(b, a)


def _numeric(rows: Sequence[Sequence[Any]], i: int) -> bool:
    values = [r[i] for r in rows if r[i] is not None]
    return bool(values) and all(
        isinstance(v, int | float | decimal.Decimal) and not isinstance(v, bool) for v in values
    )


def shared_projection(
    cols_a: Sequence[str],
    rows_a: Sequence[Sequence[Any]],
    cols_b: Sequence[str],
    rows_b: Sequence[Sequence[Any]],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] | None:
    """Both results on what they both say: the columns of the same name (case aside), else, for results of one
    width, the positions that hold numbers in both. Columns only one of them has (an id where the other has a
    name, a month as a name or a number) say nothing against the other. None when nothing is shared."""
    lower_b = [c.lower() for c in cols_b]
    pairs = [(i, lower_b.index(c.lower())) for i, c in enumerate(cols_a) if c.lower() in lower_b]
    if not pairs and len(cols_a) == len(cols_b):
        pairs = [(i, i) for i in range(len(cols_a)) if _numeric(rows_a, i) and _numeric(rows_b, i)]
    if not pairs:
        return None
    return (
        [tuple(r[i] for i, _ in pairs) for r in rows_a],
        [tuple(r[j] for _, j in pairs) for r in rows_b],
    )
