"""bot.scoring.values: the value rules of VERDICTS.md ("Values"), pinned one by one (benchmarks/mutation found the
ones no other test held)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest

from bot.scoring.values import (
    BOOL_OID,
    BPCHAR_ARRAY_OID,
    BPCHAR_OID,
    NAN,
    Json,
    TypedBool,
    close,
    converter_for,
    normalize_rows,
    normalize_value,
    show,
    sort_key,
)

TIMESTAMP_OID, JSONB_OID, JSONB_ARRAY_OID = 1114, 3802, 3807
# int (4 kinds), text, varchar, date, timestamp, timestamptz, time, interval
PLAIN_OIDS = (20, 21, 23, 26, 25, 1043, 1082, 1114, 1184, 1083, 1186)


def test_booleans_equal_booleans_only() -> None:
    assert TypedBool(True) == TypedBool(True)
    assert TypedBool(False) == TypedBool(False)
    assert TypedBool(True) != TypedBool(False)
    assert TypedBool(True) != 1 and TypedBool(False) != 0
    assert (repr(TypedBool(True)), repr(TypedBool(False)), repr(NAN)) == ("true", "false", "NaN")


def test_the_orderings_of_the_value_wrappers() -> None:
    assert TypedBool(False) < TypedBool(True)
    assert not TypedBool(True) < TypedBool(True)
    assert not TypedBool(False) < 1  # type: ignore[operator]
    assert not NAN < 1.0  # type: ignore[operator]
    assert Json("a") < Json("b")
    assert not Json("a") < Json("a")
    assert not Json("a") < "b"  # type: ignore[operator]


def test_plain_columns_are_compared_as_they_come() -> None:
    """int, text, varchar, date and time columns need no conversion: the rows come back as the very same list."""
    values = (1, 2, 3, 4, "a", "b", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1), None, dt.time(1), None)
    rows = [values]
    assert normalize_rows(rows, PLAIN_OIDS) is rows
    assert normalize_rows(rows, PLAIN_OIDS, bool_is_int=True) == rows


def test_char_padding_is_the_only_thing_stripped() -> None:
    bpchar = converter_for(BPCHAR_OID)
    assert bpchar("ab  ") == "ab"
    assert bpchar(" ab") == " ab"
    assert bpchar("ab\t") == "ab\t"  # only spaces pad a char(n)
    assert bpchar("aX ") == "aX"
    assert bpchar(None) is None
    assert bpchar(math.nan) is NAN  # a non-string goes through the generic normaliser
    assert converter_for(BPCHAR_ARRAY_OID)(["a ", ["b  ", None]]) == ("a", ("b", None))


def test_json_is_canonical_and_sql_null_stays_null() -> None:
    jsonb = converter_for(JSONB_OID)
    assert jsonb(None) is None  # SQL NULL, not the JSON null
    assert jsonb({"b": 1.0, "a": [2, 3.0]}) == jsonb({"a": [2, 3], "b": 1})
    assert jsonb({"a": 1.5}) != jsonb({"a": 1})
    assert repr(jsonb({"b": 1.0, "a": [2, "x"]})) == '{"a":[2,"x"],"b":1}'
    assert repr(Json({"a": Decimal("2.0"), "d": dt.date(2024, 1, 2)})) == '{"a":2,"d":"2024-01-02"}'


def test_json_arrays_hold_parsed_json() -> None:
    """psycopg2 leaves the elements of a json[] or jsonb[] as text: each is parsed, then canonical."""
    arrays = converter_for(JSONB_ARRAY_OID)
    assert arrays(['{"a": 1.0}', None, ["[1, 2.0]"]]) == (Json({"a": 1}), None, (Json([1, 2]),))
    assert arrays(['{"a": 1.5}']) != arrays(['{"a": 1}'])
    assert repr(Json("not json")) == '"not json"'


def test_generic_normaliser() -> None:
    assert normalize_value({"a": 1.0}) == Json({"a": 1})
    assert normalize_value({"a": 1.0}) != Json(None)
    assert normalize_value([True, 1]) == (TypedBool(True), 1)
    assert normalize_value(bytearray(b"ab")) == b"ab"
    assert normalize_value({1}) == "{1}"  # unhashable: compared by its text
    assert normalize_value(Decimal("NaN")) is NAN


def test_row_normalisation_defaults_and_loosening() -> None:
    when = dt.datetime(2024, 5, 6, 7, 8)
    rows = [(True, when, [True, when])]
    oids = (BOOL_OID, TIMESTAMP_OID, 1115)
    assert normalize_rows(rows, oids) == [(TypedBool(True), when, (TypedBool(True), when))]
    assert normalize_rows(rows, oids, bool_is_int=True) == [(1, when, (1, when))]
    assert normalize_rows(rows, oids, datetime_as_date=True) == [
        (TypedBool(True), when.date(), (TypedBool(True), when.date()))
    ]
    assert normalize_rows(rows, oids, bool_is_int=True, datetime_as_date=True) == [
        (1, when.date(), (1, when.date()))
    ]
    with pytest.raises(ValueError):
        normalize_rows([(1, 2)], (BOOL_OID,))  # a row wider than its columns is a bug, never cut short


def test_numbers_close_within_tolerance_integers_exactly() -> None:
    assert close(3, 3, abs_tol=0.5, rel_tol=0.5)
    assert not close(3, 4, abs_tol=10, rel_tol=10), "two integers compare exactly whatever the tolerance"
    assert close(3, 3.0000000001, abs_tol=1e-6, rel_tol=0), "an integer against a float: within tolerance"
    assert close(Decimal("3.0000001"), 3, abs_tol=1e-6, rel_tol=0)
    assert close(1.0, 1.5, abs_tol=0.5, rel_tol=0), "the bound itself is within"
    assert close(100.0, 101.0, abs_tol=0, rel_tol=0.01)
    assert not close(100.0, 101.5, abs_tol=0, rel_tol=0.01)
    assert not close(math.inf, 1.0, abs_tol=1e-9, rel_tol=1e-6)
    assert not close(1.0, -math.inf, abs_tol=1e-9, rel_tol=1e-6)
    assert close(math.inf, math.inf, abs_tol=1e-9, rel_tol=1e-6)
    assert not close(math.inf, -math.inf, abs_tol=1e-9, rel_tol=1e-6)
    assert close((1, 2.0), (1, 2.0000000001), abs_tol=1e-6, rel_tol=0)
    assert not close((1, 2.0), (1, 2.1), abs_tol=1e-6, rel_tol=0)
    assert not close((1,), (1, 2), abs_tol=1, rel_tol=1)
    assert not close(TypedBool(True), 1, abs_tol=1, rel_tol=1)


def test_sort_key_orders_mixed_kinds() -> None:
    values = ["b", TypedBool(True), (2,), (1, 5), 10, 9, -5.5, NAN, None]
    assert sorted(values, key=sort_key) == [None, NAN, -5.5, 9, 10, (1, 5), (2,), TypedBool(True), "b"]
    assert sorted([(2,), (1,), (None,)], key=sort_key) == [(None,), (1,), (2,)]


def test_show_renders_and_cuts() -> None:
    assert show(None) == "NULL"
    assert show("a") == "'a'"
    assert show((1, "a", None)) == "(1, 'a', NULL)"
    assert show("x" * 98) == repr("x" * 98)  # 100 characters: whole
    cut = show("x" * 99)
    assert len(cut) == 100 and cut.endswith("x…")
    inner = show(("y" * 50,))
    assert inner == "(" + ("'" + "y" * 38 + "…") + ")"
    assert show(12345, limit=3) == "12…"
