"""Values normalised for comparison: one numeric domain, typed dates and times, canonical json, arrays as tuples.

Python already compares int, Decimal and float exactly across types with consistent hashes, and aware datetimes
as instants; what is left to do is keeping bool apart from int, NaN equal to NaN, char(n) padding, json, arrays
and bytea.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

BOOL_OID, BPCHAR_OID, BYTEA_OID = 16, 1042, 17
FLOAT_OIDS = frozenset({700, 701})
NUMERIC_OID = 1700
APPROX_OIDS = FLOAT_OIDS | {NUMERIC_OID}
INT_OIDS = frozenset({20, 21, 23, 26})
JSON_OIDS = frozenset({114, 3802})


class _Nan:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NaN"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Nan)

    def __hash__(self) -> int:
        return 0x7FF8

    def __lt__(self, other: object) -> bool:
        return False


NAN = _Nan()


class TypedBool:
    """A boolean that is not equal to 1 or 0."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypedBool) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("bool", self.value))

    def __repr__(self) -> str:
        return "true" if self.value else "false"

    def __lt__(self, other: object) -> bool:
        return isinstance(other, TypedBool) and self.value < other.value


class Json:
    __slots__ = ("text",)

    def __init__(self, value: Any) -> None:
        self.text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Json) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("json", self.text))

    def __repr__(self) -> str:
        return self.text

    def __lt__(self, other: object) -> bool:
        return isinstance(other, Json) and self.text < other.text


def normalize_value(v: Any) -> Any:
    """Generic normaliser, by Python type (used for array elements and unknown column types)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return TypedBool(v)
    if isinstance(v, float):
        return NAN if math.isnan(v) else v
    if isinstance(v, Decimal):
        return NAN if v.is_nan() else v
    if isinstance(v, list | tuple):
        return tuple(normalize_value(x) for x in v)
    if isinstance(v, dict):
        return Json(v)
    if isinstance(v, memoryview | bytearray):
        return bytes(v)
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


def _bpchar(v: Any) -> Any:
    return v.rstrip(" ") if isinstance(v, str) else normalize_value(v)


def _json(v: Any) -> Any:
    return None if v is None else Json(v)


def _plain(v: Any) -> Any:
    return v


def converter_for(oid: int) -> Callable[[Any], Any]:
    if oid in INT_OIDS or oid in (25, 1043, 1082, 1114, 1184, 1083, 1186):
        return _plain  # ints, text, varchar, date, timestamp(tz), time, interval compare as they come
    if oid == BPCHAR_OID:
        return _bpchar
    if oid in JSON_OIDS:
        return _json
    return normalize_value


def normalize_rows(rows: list[tuple[Any, ...]], oids: tuple[int, ...]) -> list[tuple[Any, ...]]:
    convs = [converter_for(o) for o in oids]
    if all(c is _plain for c in convs):
        return rows
    return [tuple(c(v) for c, v in zip(convs, row, strict=True)) for row in rows]


def is_number(v: Any) -> bool:
    return isinstance(v, int | float | Decimal) and not isinstance(v, bool)


def close(a: Any, b: Any, *, abs_tol: float, rel_tol: float) -> bool:
    """Equal, or both numbers within max(abs_tol, rel_tol * max(|a|, |b|)); integers only exactly."""
    if a == b:
        return True
    if not (is_number(a) and is_number(b)):
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return all(close(x, y, abs_tol=abs_tol, rel_tol=rel_tol) for x, y in zip(a, b, strict=True))
        return False
    if isinstance(a, int) and isinstance(b, int):
        return False
    fa, fb = float(a), float(b)
    if math.isinf(fa) or math.isinf(fb):
        return fa == fb
    return abs(fa - fb) <= max(abs_tol, rel_tol * max(abs(fa), abs(fb)))


def sort_key(v: Any) -> tuple[int, Any]:
    """A total order over normalised values of mixed kinds (for pairing rows, never for equality)."""
    if v is None:
        return (0, 0)
    if v is NAN:
        return (1, 0)
    if is_number(v):
        return (2, float(v))
    if isinstance(v, tuple):
        return (3, tuple(sort_key(x) for x in v))
    return (4, type(v).__name__, repr(v))  # type: ignore[return-value]


def signature_value(v: Any) -> Any:
    """A value rounded for column signatures, so near-equal numbers land together (verification is exact)."""
    if is_number(v) and not isinstance(v, int):
        f = float(v)
        return float(f"{f:.6g}") if math.isfinite(f) else f
    return v


def show(v: Any, limit: int = 60) -> str:
    """A short, readable rendering of a value for messages."""
    if v is None:
        text = "NULL"
    elif isinstance(v, str):
        text = repr(v)
    elif isinstance(v, tuple):
        text = "(" + ", ".join(show(x, 20) for x in v) + ")"
    else:
        text = str(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"
