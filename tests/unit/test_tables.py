"""Result-set comparison without a database: ResultSets built by hand with the values and type OIDs psycopg2
returns, the ORDER BY analysis of gold SQL, option layering, and the legacy evaluator presets (VERDICTS.md)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

from bot.base.errors import SqlcanaryError
from bot.base.results import ResultSet
from bot.cases.model import CompareOptions
from bot.scoring.execution import DEFAULTS, judge_results, resolve_options, wants_order
from bot.scoring.order import key_positions, order_info, with_limit, with_order_keys
from bot.scoring.presets import LEGACY, PRESETS, EvaluatorError, defog_orders
from bot.scoring.tables import OrderCheck, TableOptions, compare_tables
from bot.scoring.values import DEFAULT_ABS_TOL, DEFAULT_REL_TOL

INT4, INT8, NUMERIC, FLOAT8, BOOL, TEXT, BPCHAR = 23, 20, 1700, 701, 16, 25, 1042
DATE, TIMESTAMP, TIMESTAMPTZ, INTERVAL, JSONB, INT4_ARRAY = 1082, 1114, 1184, 1186, 3802, 1007
UTC = dt.UTC
PLUS_2 = dt.timezone(dt.timedelta(hours=2))

OPTS = TableOptions()  # the defaults: multiset rows, permute columns, tight tolerance


def rs(
    columns: str, oids: tuple[int, ...], rows: list[tuple[Any, ...]], *, truncated: bool = False
) -> ResultSet:
    cols = tuple(c.strip() for c in columns.split(","))
    assert len(cols) == len(oids)
    return ResultSet(columns=cols, type_oids=oids, rows=list(rows), truncated=truncated)


def one(oid: int, *values: Any, name: str = "v", truncated: bool = False) -> ResultSet:
    """A one-column result."""
    return rs(name, (oid,), [(v,) for v in values], truncated=truncated)


def compare(gold: ResultSet, pred: ResultSet, order: OrderCheck | None = None, **opts: Any):
    return compare_tables(gold, pred, opts=TableOptions(**opts), order=order)


PEOPLE = rs("id, name", (INT4, TEXT), [(1, "Ada"), (2, "Bo"), (3, "Cy")])


# --- rows: multiset and set ------------------------------------------------------------------------------------


def test_identical_results_match_exactly() -> None:
    v = compare(PEOPLE, PEOPLE)
    assert (v.match, v.kind, v.message) == (True, "exact", "results match")


def test_row_order_is_ignored_without_an_order_check() -> None:
    pred = rs("id, name", (INT4, TEXT), list(reversed(PEOPLE.rows)))
    assert compare(PEOPLE, pred).match is True


def test_multiset_counts_duplicates() -> None:
    v = compare(one(INT4, 1, 1, 2), one(INT4, 1, 2))
    assert v.match is False
    assert "gold has 3 rows, prediction has 2" in v.message


def test_multiset_notices_a_different_duplicate() -> None:
    assert compare(one(INT4, 1, 1, 2), one(INT4, 1, 2, 2)).match is False


def test_set_mode_ignores_duplicates_and_says_so() -> None:
    v = compare(one(INT4, 1, 1, 2), one(INT4, 2, 1, 2, 2), rows="set")
    assert v.match is True
    assert "set_semantics" in v.flags


def test_set_mode_still_needs_the_same_values() -> None:
    assert compare(one(INT4, 1, 1, 2), one(INT4, 1, 3), rows="set").match is False


# --- columns: positional, permute, subset ----------------------------------------------------------------------

SWAPPED = rs("name, id", (TEXT, INT4), [("Ada", 1), ("Bo", 2), ("Cy", 3)])
EXTRA = rs("id, name, city", (INT4, TEXT, TEXT), [(1, "Ada", "Paris"), (2, "Bo", "Rome"), (3, "Cy", None)])


def test_positional_refuses_swapped_columns() -> None:
    assert compare(PEOPLE, SWAPPED, columns="positional").match is False


def test_permute_matches_swapped_columns_and_reports_the_mapping() -> None:
    v = compare(PEOPLE, SWAPPED, columns="permute")
    assert (v.match, v.kind, v.mapping) == (True, "permuted_columns", (1, 0))


def test_permute_by_value_when_names_differ() -> None:
    pred = rs("who, n", (TEXT, INT8), [("Cy", 3), ("Ada", 1), ("Bo", 2)])
    v = compare(PEOPLE, pred)
    assert (v.match, v.kind, v.mapping) == (True, "permuted_columns", (1, 0))


def test_permute_verifies_row_by_row_not_column_by_column() -> None:
    # each column holds the right values on its own, but the rows pair them differently
    repaired = rs("id, name", (INT4, TEXT), [(1, "Bo"), (2, "Ada"), (3, "Cy")])
    v = compare(PEOPLE, repaired)
    assert v.match is False


def test_permute_refuses_an_extra_column() -> None:
    v = compare(PEOPLE, EXTRA, columns="permute")
    assert v.match is False
    assert "column count differs: gold has 2 (id, name), prediction has 3" in v.message


def test_subset_accepts_extra_prediction_columns_as_its_own_kind() -> None:
    v = compare(PEOPLE, EXTRA, columns="subset")
    assert (v.match, v.kind, v.mapping) == (True, "subset_columns", (0, 1))


def test_subset_does_not_accept_missing_columns() -> None:
    assert compare(EXTRA, PEOPLE, columns="subset").match is False


def test_subset_still_checks_the_rows() -> None:
    pred = rs("city, name, id", (TEXT, TEXT, INT4), [("Paris", "Ada", 1), ("Rome", "Bo", 2), (None, "Cy", 4)])
    assert compare(PEOPLE, pred, columns="subset").match is False


# --- values ----------------------------------------------------------------------------------------------------


def test_numeric_and_float_within_tolerance_is_its_own_kind() -> None:
    v = compare(one(NUMERIC, Decimal("0.3")), one(FLOAT8, 0.1 + 0.2))
    assert (v.match, v.kind) == (True, "within_tolerance")


def test_tolerance_is_configurable() -> None:
    third, rounded = one(NUMERIC, Decimal("0.33333333333333333333")), one(NUMERIC, Decimal("0.33"))
    assert compare(third, rounded).match is False
    assert compare(third, rounded, abs_tol=0.01).kind == "within_tolerance"
    assert compare(third, rounded, rel_tol=0.02).match is True


def test_default_tolerance_absorbs_float4_noise_but_not_a_real_difference() -> None:
    """AVG(real_col) (a float8 of float4 values) vs AVG(real_col::numeric) on PostgreSQL: 5.5e-7 apart."""
    assert (DEFAULT_ABS_TOL, DEFAULT_REL_TOL) == (1e-9, 1e-6)
    assert (OPTS.abs_tol, OPTS.rel_tol) == (DEFAULT_ABS_TOL, DEFAULT_REL_TOL)
    assert (DEFAULTS.abs_tol, DEFAULTS.rel_tol) == (DEFAULT_ABS_TOL, DEFAULT_REL_TOL)
    avg_real, avg_numeric = one(FLOAT8, 0.21111111591259638), one(NUMERIC, Decimal("0.21111100000000000000"))
    v = compare(avg_real, avg_numeric)
    assert (v.match, v.kind) == (True, "within_tolerance")
    assert compare(avg_real, one(FLOAT8, 0.21111111591259638 * 1.0001)).match is False  # 1e-4 relative
    assert compare(avg_real, one(FLOAT8, 0.21111111591259638 * 1.00001)).match is False  # 1e-5 relative
    assert compare(one(FLOAT8, 1e-12), one(FLOAT8, 3e-12)).match is True  # below abs_tol
    assert compare(one(FLOAT8, 1e-3), one(FLOAT8, 1.1e-3)).match is False


def test_integers_compare_exactly_whatever_the_tolerance() -> None:
    assert compare(one(INT8, 1000), one(INT4, 1001), abs_tol=5, rel_tol=0.1).match is False


def test_int_and_numeric_share_one_domain() -> None:
    v = compare(one(INT8, 3), one(NUMERIC, Decimal("3.000")))
    assert (v.match, v.kind) == (True, "exact")


def test_tolerance_pairs_rows_by_their_exact_columns() -> None:
    gold = rs("k, x", (TEXT, FLOAT8), [("a", 1.0), ("b", 2.0)])
    pred = rs("k, x", (TEXT, NUMERIC), [("b", Decimal("2.0000000001")), ("a", Decimal("1"))])
    assert compare(gold, pred, rel_tol=1e-6).match is True
    swapped = rs("k, x", (TEXT, FLOAT8), [("a", 2.0), ("b", 1.0)])
    assert compare(gold, swapped, rel_tol=1e-6).match is False


def test_tolerance_with_two_approximate_columns_finds_the_right_pairing() -> None:
    gold = rs("x, y", (FLOAT8, FLOAT8), [(0.1 + 0.2, 2.0), (0.3, 1.0)])
    pred = rs("x, y", (FLOAT8, FLOAT8), [(0.3, 2.0), (0.1 + 0.2, 1.0)])
    assert compare(gold, pred).match is True


@pytest.mark.parametrize(("oid", "nan"), [(FLOAT8, float("nan")), (NUMERIC, Decimal("NaN"))])
def test_nan_equals_nan(oid: int, nan: Any) -> None:
    v = compare(one(oid, nan, 1.5), one(oid, 1.5, nan))
    assert v.match is True


def test_nan_is_not_a_number_close_to_anything() -> None:
    assert compare(one(FLOAT8, float("nan")), one(FLOAT8, 0.0), abs_tol=1e9).match is False


def test_infinities() -> None:
    assert compare(one(FLOAT8, math.inf), one(FLOAT8, math.inf)).match is True
    assert compare(one(FLOAT8, math.inf), one(FLOAT8, -math.inf)).match is False


def test_bool_is_not_int() -> None:
    assert compare(one(BOOL, True, False), one(INT4, 1, 0)).match is False
    assert compare(one(BOOL, True, False), one(BOOL, False, True)).match is True


def test_null_equals_null_but_not_a_value() -> None:
    assert compare(one(TEXT, None, "a"), one(TEXT, "a", None)).match is True
    assert compare(one(INT4, None), one(INT4, 0)).match is False


def test_char_padding_is_stripped() -> None:
    assert compare(one(BPCHAR, "ab   ", "c  "), one(TEXT, "ab", "c")).match is True
    assert compare(one(TEXT, "ab  "), one(TEXT, "ab")).match is False  # text keeps its spaces


def test_text_is_case_sensitive() -> None:
    assert compare(one(TEXT, "Paris"), one(TEXT, "paris")).match is False


def test_json_ignores_key_order_but_not_values() -> None:
    gold = one(JSONB, {"a": 1, "b": [1, {"x": None, "y": 2}]})
    assert compare(gold, one(JSONB, {"b": [1, {"y": 2, "x": None}], "a": 1})).match is True
    assert compare(gold, one(JSONB, {"a": 1, "b": [{"y": 2, "x": None}, 1]})).match is False


def test_json_rows_can_be_counted_as_a_multiset() -> None:
    assert compare(one(JSONB, {"a": 1}, {"a": 1}), one(JSONB, {"a": 1})).match is False


def test_tz_aware_equal_instants_match() -> None:
    noon_utc = dt.datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    assert compare(
        one(TIMESTAMPTZ, noon_utc), one(TIMESTAMPTZ, dt.datetime(2024, 3, 1, 14, 0, tzinfo=PLUS_2))
    ).match
    assert not compare(one(TIMESTAMPTZ, noon_utc), one(TIMESTAMPTZ, noon_utc + dt.timedelta(seconds=1))).match


def test_timestamps_are_not_cut_to_a_date() -> None:
    gold = one(TIMESTAMP, dt.datetime(2024, 3, 1, 9, 30))
    assert compare(gold, one(TIMESTAMP, dt.datetime(2024, 3, 1, 17, 0))).match is False
    assert compare(gold, one(DATE, dt.date(2024, 3, 1))).match is False


def test_intervals_compare_as_durations() -> None:
    assert compare(one(INTERVAL, dt.timedelta(hours=36)), one(INTERVAL, dt.timedelta(days=1, hours=12))).match


def test_arrays_compare_element_by_element_in_order() -> None:
    gold = one(INT4_ARRAY, [1, 2, None], [3])
    assert compare(gold, one(INT4_ARRAY, [3], [1, 2, None])).match is True
    assert compare(gold, one(INT4_ARRAY, [2, 1, None], [3])).match is False


def test_loosened_options_bool_is_int_and_datetime_as_date() -> None:
    assert compare(one(BOOL, True, False), one(INT4, 1, 0), bool_is_int=True).match is True
    same_day = one(TIMESTAMP, dt.datetime(2024, 3, 1, 9, 30)), one(TIMESTAMP, dt.datetime(2024, 3, 1, 17, 0))
    assert compare(*same_day, datetime_as_date=True).match is True
    assert compare(*same_day).match is False


def test_empty_gold_fails_when_asked() -> None:
    assert compare(one(INT4), one(INT4)).match is True
    v = compare(one(INT4), one(INT4), empty_gold_fails=True)
    assert v.match is False and "gold_empty" in v.flags


# --- truncated results -----------------------------------------------------------------------------------------


def test_both_truncated_is_undecidable_not_wrong() -> None:
    v = compare(one(INT4, 1, 2, truncated=True), one(INT4, 1, 2, truncated=True))
    assert (v.match, v.kind) == (None, "undecidable")
    assert "truncated" in v.flags


def test_one_side_truncated_is_a_row_count_mismatch() -> None:
    v = compare(one(INT4, 1, 2, truncated=True), one(INT4, 1, 2))
    assert (v.match, v.kind) == (False, "mismatch")
    assert "truncated" in v.flags and "gold exceeds the row cap" in v.message


def test_one_side_truncated_under_set_semantics_is_undecidable() -> None:
    v = compare(one(INT4, 1, 2), one(INT4, 1, 2, truncated=True), rows="set")
    assert (v.match, v.kind) == (None, "undecidable")


def test_undecidable_message_names_the_truncated_side() -> None:
    v = compare(one(INT4, 1, 2), one(INT4, 1, 2, truncated=True), rows="set")
    assert "both" not in v.message and "prediction" in v.message


# --- order -----------------------------------------------------------------------------------------------------

RANKED = rs("k, v", (INT4, TEXT), [(1, "a"), (2, "b"), (2, "c"), (3, "d")])


def test_order_check_catches_another_order() -> None:
    pred = rs("k, v", (INT4, TEXT), [(3, "d"), (2, "b"), (2, "c"), (1, "a")])
    v = compare(RANKED, pred, OrderCheck(key_positions=(0,)))
    assert v.match is False
    assert "order_checked" in v.flags
    assert "row order differs at row 1" in v.message and "3" in v.message


def test_without_order_check_the_same_rows_pass() -> None:
    pred = rs("k, v", (INT4, TEXT), [(3, "d"), (2, "b"), (2, "c"), (1, "a")])
    assert compare(RANKED, pred).match is True


def test_ties_on_the_order_key_may_come_in_any_order() -> None:
    pred = rs("k, v", (INT4, TEXT), [(1, "a"), (2, "c"), (2, "b"), (3, "d")])
    v = compare(RANKED, pred, OrderCheck(key_positions=(0,)))
    assert (v.match, v.kind) == (True, "exact")


def test_unmapped_order_key_compares_the_whole_sequence() -> None:
    pred = rs("k, v", (INT4, TEXT), [(1, "a"), (2, "c"), (2, "b"), (3, "d")])
    assert compare(RANKED, pred, OrderCheck(key_positions=None)).match is False
    assert compare(RANKED, RANKED, OrderCheck(key_positions=None)).match is True


def test_unmapped_order_key_with_known_runs_compares_each_run_as_a_multiset() -> None:
    gold = one(TEXT, "a", "b", "c", "d")  # ORDER BY a hidden key: a < b = c < d
    check = OrderCheck(key_positions=None, runs=(1, 2, 1))
    assert compare(gold, one(TEXT, "a", "c", "b", "d"), check).match is True
    v = compare(gold, one(TEXT, "b", "a", "c", "d"), check)
    assert v.match is False and "row order differs" in v.message


def test_order_is_checked_after_the_column_permutation() -> None:
    pred = rs("v, k", (TEXT, INT4), [("d", 3), ("c", 2), ("b", 2), ("a", 1)])
    assert compare(RANKED, pred, OrderCheck(key_positions=(0,))).match is False
    pred_ok = rs("v, k", (TEXT, INT4), [("a", 1), ("c", 2), ("b", 2), ("d", 3)])
    v = compare(RANKED, pred_ok, OrderCheck(key_positions=(0,)))
    assert (v.match, v.kind) == (True, "permuted_columns")


def test_a_limit_cut_through_a_tie_accepts_another_tied_row_and_flags_it() -> None:
    gold = rs("k, v", (INT4, TEXT), [(1, "a"), (2, "b")])  # LIMIT 2; (2, 'c') ties with (2, 'b')
    pred = rs("k, v", (INT4, TEXT), [(1, "a"), (2, "c")])
    v = compare(gold, pred, OrderCheck(key_positions=(0,), tie_cut=True))
    assert v.match is True
    assert "ambiguous_ties" in v.flags
    assert compare(gold, pred, OrderCheck(key_positions=(0,))).match is False


def test_a_tie_cut_still_needs_the_untied_rows_and_the_count() -> None:
    gold = rs("k, v", (INT4, TEXT), [(1, "a"), (2, "b")])
    check = OrderCheck(key_positions=(0,), tie_cut=True)
    assert compare(gold, rs("k, v", (INT4, TEXT), [(0, "z"), (2, "c")]), check).match is False
    assert compare(gold, rs("k, v", (INT4, TEXT), [(1, "a"), (2, "c"), (2, "b")]), check).match is False


# --- messages --------------------------------------------------------------------------------------------------


def test_first_difference_names_the_column_and_both_values() -> None:
    pred = rs("id, name", (INT4, TEXT), [(1, "Ada"), (2, "Bob"), (3, "Cy")])
    v = compare(PEOPLE, pred)
    assert v.match is False
    assert v.message == "1 of 3 rows differs; `name` for (id=2): gold 'Bo', prediction 'Bob'"
    first = v.details["first_difference"]
    assert (first["kind"], first["key"], first["column"]) == ("changed", {"id": "2"}, "name")
    assert (first["gold"], first["prediction"], first["differing"], first["total"]) == ("'Bo'", "'Bob'", 1, 3)


def test_column_count_difference_lists_both_headers() -> None:
    v = compare(PEOPLE, one(INT4, 1, 2, 3, name="id"))
    assert v.details == {"gold_columns": ["id", "name"], "pred_columns": ["id"]}


# --- order_info, key_positions, with_limit ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "columns", "positions"),
    [
        ("SELECT name, age AS a FROM people ORDER BY a DESC", ("name", "a"), (1,)),
        ("SELECT name, age FROM people ORDER BY 2", ("name", "age"), (1,)),
        ("SELECT p.name, p.age FROM people p ORDER BY p.age", ("name", "age"), (1,)),
        ("SELECT name, age FROM people ORDER BY age NULLS FIRST, name", ("name", "age"), (1, 0)),
        (
            "SELECT count(*) AS n, city FROM people GROUP BY city ORDER BY count(*) DESC, city",
            ("n", "city"),
            (0, 1),
        ),
        ("SELECT name, age FROM a UNION SELECT name, age FROM b ORDER BY age", ("name", "age"), (1,)),
        (
            "SELECT name, age FROM a UNION ALL SELECT name, age FROM b ORDER BY 2 LIMIT 3",
            ("name", "age"),
            (1,),
        ),
        ('SELECT name, "Age" FROM people ORDER BY "Age"', ("name", "Age"), (1,)),
        ("WITH x AS (SELECT 1 AS v) SELECT v FROM x ORDER BY v", ("v",), (0,)),
        ("SELECT name FROM people ORDER BY age", ("name",), None),  # the key is not an output column
        ("SELECT name FROM people ORDER BY 5", ("name",), None),
        # PostgreSQL's rule: a bare name is the output column of that name, shadowing the input column ...
        ("SELECT name, age / 10 AS age FROM people ORDER BY age", ("name", "age"), (1,)),
        ("SELECT name, age / 10 AS age FROM people ORDER BY (age) DESC", ("name", "age"), (1,)),
        # ... a qualified name is the input column: not the output `age` computed from it (the tie probe decides)
        ("SELECT name, age / 10 AS age FROM people ORDER BY people.age", ("name", "age"), None),
        ("SELECT name, age / 10 AS age FROM people p ORDER BY p.age, name", ("name", "age"), None),
        # ... and an input column that is returned, under its name or another, maps to that output column
        ("SELECT name, p.age FROM people p ORDER BY age", ("name", "age"), (1,)),
        ("SELECT name, age FROM people p ORDER BY p.age", ("name", "age"), (1,)),
        ("SELECT name, p.age AS years FROM people p ORDER BY age", ("name", "years"), (1,)),
        ("SELECT name, age / 10 AS decade FROM people ORDER BY age / 10", ("name", "decade"), (1,)),
        ("SELECT a.id, b.id FROM a JOIN b ON a.k = b.k ORDER BY b.id", ("id", "id"), (1,)),
        ("SELECT * FROM people ORDER BY people.age", ("id", "name", "age"), (2,)),
        ("SELECT * FROM people ORDER BY 2", ("id", "name", "age"), (1,)),
    ],
)
def test_key_positions(sql: str, columns: tuple[str, ...], positions: tuple[int, ...] | None) -> None:
    info = order_info(sql)
    assert info.ordered
    assert key_positions(sql, info, columns) == positions


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM people",
        "SELECT * FROM (SELECT name FROM people ORDER BY name) s",  # only the top level counts
        "SELECT name FROM people WHERE note = 'order by name'",
        "SELECT name, age FROM a UNION SELECT name, age FROM b",
        "not sql (",
    ],
)
def test_order_info_unordered(sql: str) -> None:
    assert order_info(sql).ordered is False


def test_order_info_reads_limit_offset_and_distinct() -> None:
    info = order_info("SELECT DISTINCT city FROM people ORDER BY city DESC LIMIT 2 OFFSET 1")
    assert (info.ordered, info.keys, info.limit, info.offset, info.has_distinct) == (
        True,
        ("city",),
        2,
        1,
        True,
    )
    assert order_info("SELECT name FROM people ORDER BY name LIMIT ALL").limit is None


def test_order_info_reads_fetch_first() -> None:
    assert order_info("SELECT name FROM people ORDER BY age FETCH FIRST 3 ROWS ONLY").limit == 3


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT name FROM people ORDER BY age LIMIT 3", "SELECT name FROM people ORDER BY age LIMIT 4"),
        (
            "SELECT name FROM people ORDER BY age LIMIT 3 OFFSET 2",
            "SELECT name FROM people ORDER BY age LIMIT 4 OFFSET 2",
        ),
        (
            "SELECT a FROM x UNION SELECT a FROM y ORDER BY a LIMIT 1",
            "SELECT a FROM x UNION SELECT a FROM y ORDER BY a LIMIT 4",
        ),
        ("SELECT name FROM people", "SELECT name FROM people LIMIT 4"),
    ],
)
def test_with_limit(sql: str, expected: str) -> None:
    assert with_limit(sql, 4) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT name, age / 10 AS age FROM people ORDER BY people.age",
            "SELECT name, age / 10 AS age, people.age AS __sqlcanary_k0 FROM people ORDER BY people.age",
        ),
        # an ordinal or an output name means that output's expression, not the input column of the same name
        (
            "SELECT name, -age AS age FROM people ORDER BY age, people.id",
            "SELECT name, -age AS age, -age AS __sqlcanary_k0, people.id AS __sqlcanary_k1 FROM people ORDER BY age, "
            "people.id",
        ),
        (
            "SELECT name, -age AS a FROM people ORDER BY 2 DESC, id",
            "SELECT name, -age AS a, -age AS __sqlcanary_k0, id AS __sqlcanary_k1 FROM people ORDER BY 2 DESC, id",
        ),
        ("SELECT * FROM people ORDER BY 2, id", None),  # which column is 2 is not known without the schema
        ("SELECT DISTINCT name FROM people ORDER BY name", None),
    ],
)
def test_with_order_keys_adds_the_values_the_keys_sort_on(sql: str, expected: str | None) -> None:
    assert with_order_keys(sql) == expected


@pytest.mark.parametrize("sql", ["INSERT INTO t VALUES (1)", "not sql ("])
def test_with_limit_gives_up_on_what_it_cannot_rewrite(sql: str) -> None:
    assert with_limit(sql, 4) is None


# --- options ---------------------------------------------------------------------------------------------------


def test_resolve_options_defaults() -> None:
    assert resolve_options() == DEFAULTS
    assert (DEFAULTS.preset, DEFAULTS.rows, DEFAULTS.columns, DEFAULTS.order) == (
        "sqlcanary",
        "multiset",
        "permute",
        "auto",
    )


def test_resolve_options_later_layers_win_field_by_field() -> None:
    suite = CompareOptions(rows="set", abs_tol=0.01)
    case = CompareOptions(abs_tol=0.5, columns="subset")
    out = resolve_options(suite, case, None)
    assert (out.rows, out.columns, out.abs_tol, out.rel_tol, out.preset) == (
        "set",
        "subset",
        0.5,
        DEFAULT_REL_TOL,
        "sqlcanary",
    )
    assert resolve_options(suite, case, CompareOptions(preset="bird")).preset == "bird"


def test_resolve_options_refuses_an_unknown_preset() -> None:
    with pytest.raises((ValueError, SqlcanaryError), match="unknown preset 'bird2'"):
        resolve_options(CompareOptions(preset="bird2"))


def test_wants_order_follows_the_gold_and_the_order_option() -> None:
    ordered, plain = "SELECT a FROM t ORDER BY a", "SELECT a FROM t"
    assert wants_order(ordered, DEFAULTS) is not None
    assert wants_order(plain, DEFAULTS) is None
    assert wants_order(ordered, resolve_options(CompareOptions(order="ignore"))) is None
    assert wants_order(plain, resolve_options(CompareOptions(order="strict"))) is not None
    assert wants_order(ordered, resolve_options(CompareOptions(preset="test_suite"))) is None


def test_judge_results_applies_the_resolved_options() -> None:
    gold, pred = one(INT4, 1, 1, 2), one(INT4, 1, 2)
    assert judge_results(gold, pred, options=DEFAULTS, gold_sql="SELECT 1").match is False
    v = judge_results(
        gold, pred, options=resolve_options(CompareOptions(rows="set")), gold_sql="SELECT 1", alternative=2
    )
    assert (v.scorer, v.match, v.details["alternative"]) == ("execution", True, 2)


def test_judge_results_reports_a_legacy_evaluator_crash_as_a_verdict() -> None:
    arrays = one(INT4_ARRAY, [1, 2])
    v = judge_results(
        arrays, arrays, options=resolve_options(CompareOptions(preset="bird")), gold_sql="SELECT 1"
    )
    assert (v.match, v.kind, v.details["preset"]) == (False, "evaluator_error", "bird")


# --- the legacy presets on the VERDICTS.md pairs ---------------------------------------------------------------

E = "error"
LEGACY_ORDER = ("bird", "critic", "test_suite", "defog_exact", "defog", "spider2")
AB = rs("id, name", (INT4, TEXT), [(1, "a"), (2, "b")])
T10, T12 = dt.datetime(2024, 3, 1, 10, 0), dt.datetime(2024, 3, 1, 12, 0)
# (name, gold, pred, gold_sql, {preset: 1 | 0 | error}, sqlcanary default verdict with an order check if ordered)
VERDICT_ROWS = [
    ("identical", AB, AB, "SELECT id, name FROM t", "1 1 1 1 1 1", True),
    (
        "row order differs, gold has no ORDER BY",
        AB,
        rs("id, name", (INT4, TEXT), [(2, "b"), (1, "a")]),
        "SELECT id, name FROM t",
        "1 1 1 1 1 1",
        True,
    ),
    (
        "row order differs, gold has ORDER BY",
        AB,
        rs("id, name", (INT4, TEXT), [(2, "b"), (1, "a")]),
        "SELECT id, name FROM t ORDER BY id",
        "1 1 0 1 1 0",
        False,
    ),
    ("a duplicate row dropped", one(INT4, 1, 1, 2), one(INT4, 1, 2), "SELECT v FROM t", "1 1 0 1 1 0", False),
    (
        "columns swapped",
        AB,
        rs("name, id", (TEXT, INT4), [("a", 1), ("b", 2)]),
        "SELECT id, name FROM t",
        "0 0 1 1 1 1",
        True,
    ),
    (
        "an extra column in the prediction",
        AB,
        rs("id, name, x", (INT4, TEXT, INT4), [(1, "a", 9), (2, "b", 9)]),
        "SELECT id, name FROM t",
        "0 0 0 0 1 1",
        False,
    ),
    (
        "float 0.1+0.2 vs 0.3",
        one(FLOAT8, 0.1 + 0.2),
        one(FLOAT8, 0.3),
        "SELECT v FROM t",
        "0 0 0 0 1 1",
        True,
    ),
    (
        "Decimal('0.3') vs float 0.1+0.2",
        one(NUMERIC, Decimal("0.3")),
        one(FLOAT8, 0.1 + 0.2),
        "SELECT v FROM t",
        "0 0 0 0 0 0",
        True,
    ),
    (
        "Decimal 1/3 vs ROUND(1/3, 2)",
        one(NUMERIC, Decimal("0.33333333333333333333")),
        one(NUMERIC, Decimal("0.33")),
        "SELECT v FROM t",
        "0 0 0 0 0 0",
        False,
    ),
    ("int 1 vs bool True", one(INT4, 1), one(BOOL, True), "SELECT v FROM t", "1 1 1 1 1 1", False),
    ("both empty", one(INT4), one(INT4), "SELECT v FROM t WHERE false", "1 0 1 1 1 1", True),
    ("NULL vs NULL", one(TEXT, None), one(TEXT, None), "SELECT v FROM t", "1 1 1 1 1 1", True),
    (
        "ties under ORDER BY in another order",
        RANKED,
        rs("k, v", (INT4, TEXT), [(1, "a"), (2, "c"), (2, "b"), (3, "d")]),
        "SELECT k, v FROM ties ORDER BY k",
        "1 1 0 1 1 0",
        True,
    ),
    (
        "timestamps on the same day, different times",
        one(TIMESTAMP, T10),
        one(TIMESTAMP, T12),
        "SELECT v FROM t",
        "0 1 0 0 0 0",
        False,
    ),
    (
        "an array column",
        one(INT4_ARRAY, [1, 2]),
        one(INT4_ARRAY, [1, 2]),
        "SELECT v FROM t",
        "E E E 1 E E",
        True,
    ),
    (
        "rows re-paired",
        AB,
        rs("id, name", (INT4, TEXT), [(1, "b"), (2, "a")]),
        "SELECT id, name FROM t",
        "0 0 0 0 0 1",
        False,
    ),
]


def _cells(spec: str) -> dict[str, str]:
    return dict(zip(LEGACY_ORDER, spec.replace("E", E).split(), strict=True))


LEGACY_CASES = [
    pytest.param(gold, pred, sql, preset, cell, id=f"{name}-{preset}")
    for name, gold, pred, sql, spec, _ in VERDICT_ROWS
    for preset, cell in _cells(spec).items()
]


def test_every_legacy_preset_is_registered() -> None:
    assert set(LEGACY) == set(PRESETS) - {"sqlcanary"}


@pytest.mark.parametrize(("gold", "pred", "gold_sql", "preset", "cell"), LEGACY_CASES)
def test_legacy_preset_reproduces_the_verdicts_table(gold, pred, gold_sql, preset, cell) -> None:
    fn = LEGACY[preset]
    if cell == E:
        with pytest.raises(EvaluatorError):
            fn(gold, pred, gold_sql=gold_sql, question="")
    else:
        assert fn(gold, pred, gold_sql=gold_sql, question="") is (cell == "1")


@pytest.mark.parametrize(
    ("gold", "pred", "gold_sql", "expected"),
    [pytest.param(g, p, s, want, id=name) for name, g, p, s, _, want in VERDICT_ROWS],
)
def test_sqlcanary_rules_on_the_verdicts_table(gold, pred, gold_sql, expected) -> None:
    info = order_info(gold_sql)
    check = OrderCheck(key_positions=key_positions(gold_sql, info, gold.columns)) if info.ordered else None
    assert compare_tables(gold, pred, opts=OPTS, order=check).match is expected


def test_defog_orders_rows_when_the_question_says_so() -> None:
    pred = rs("id, name", (INT4, TEXT), [(2, "b"), (1, "a")])
    assert LEGACY["defog_exact"](AB, pred, gold_sql="", question="list them") is True
    assert LEGACY["defog_exact"](AB, pred, gold_sql="", question="list them in order of id") is False


# --- defog sql-eval (eval/eval.py compare_df, normalize_table) -------------------------------------------------

DEFOG_EXACT = LEGACY["defog_exact"]
BA = rs("id, name", (INT4, TEXT), [(2, "b"), (1, "a")])


def test_defog_exact_compares_values_not_column_names() -> None:
    renamed = rs("id, label", (INT4, TEXT), [(1, "a"), (2, "b")])
    assert DEFOG_EXACT(AB, renamed, gold_sql="", question="") is True
    renamed_ba = rs("id, label", (INT4, TEXT), [(2, "b"), (1, "a")])
    assert DEFOG_EXACT(AB, renamed_ba, gold_sql="", question="") is True
    assert LEGACY["defog"](AB, renamed, gold_sql="", question="") is True
    # names only put the columns in alphabetical order: a renaming that changes that order misaligns the values
    zid = rs("zid, name", (INT4, TEXT), [(2, "b"), (1, "a")])
    assert DEFOG_EXACT(AB, zid, gold_sql="", question="") is False


@pytest.mark.parametrize(
    ("question", "ordered"),
    [
        ("list them in order of id", True),
        ("Sort them by id", True),
        ("arrange them by id", True),
        ("ORDER: by id", True),
        ("list them", False),
        ("which border towns", False),  # the substring "order" is not the word
        # sql-eval's regex is \b(order|sort|arrange)\b: "sorted" is not "sort"
        ("list them sorted by id", False),
        ("arranged by id", False),
    ],
)
def test_defog_orders_rows_on_the_words_order_sort_arrange(question: str, ordered: bool) -> None:
    assert defog_orders(question) is ordered
    assert DEFOG_EXACT(AB, BA, gold_sql="", question=question) is (not ordered)


def test_defog_exact_sorts_each_side_by_the_columns_its_order_by_names() -> None:
    """With an ordering question, sql-eval re-sorts each result by the columns its own query's ORDER BY names
    (descending unless only ASC is written) and moves those columns last; a query without ORDER BY keeps its
    returned order and alphabetical columns."""
    q, plain = "sort them by id", "SELECT id, name FROM t"
    assert DEFOG_EXACT(
        AB, BA, gold_sql=plain + " ORDER BY id", pred_sql=plain + " ORDER BY id DESC", question=q
    )
    assert not DEFOG_EXACT(
        AB, BA, gold_sql=plain + " ORDER BY id ASC", pred_sql=plain + " ORDER BY id DESC", question=q
    )
    assert DEFOG_EXACT(AB, BA, gold_sql=plain + " ORDER BY name", pred_sql=plain, question=q)  # (2,b), (1,a)
    assert not DEFOG_EXACT(AB, BA, gold_sql=plain + " ORDER BY name ASC", pred_sql=plain, question=q)
    assert not DEFOG_EXACT(AB, BA, gold_sql=plain + " ORDER BY id", pred_sql=plain, question=q)  # (name, id)


def test_defog_exact_keeps_numpy_broadcasting_and_pandas_crashes() -> None:
    # (df_gold.values == df_gen.values).all(): an empty gold "equals" a one-row prediction of the same width
    assert DEFOG_EXACT(one(INT4), one(INT4, 7), gold_sql="", question="") is True
    assert DEFOG_EXACT(one(INT4), one(INT4, 7, 8), gold_sql="", question="") is False
    # NULL and NaN are one missing value after fillna(-99999)
    assert DEFOG_EXACT(one(FLOAT8, math.nan, 1.0), one(FLOAT8, 1.0, None), gold_sql="", question="") is True
    twice = rs("id, id", (INT4, INT4), [(1, 1), (2, 2)])
    other_names = rs("a, b", (INT4, INT4), [(2, 2), (1, 1)])
    with pytest.raises(EvaluatorError):  # pandas cannot reindex columns with duplicate names
        DEFOG_EXACT(twice, other_names, gold_sql="", question="")
    assert (
        LEGACY["defog"](twice, other_names, gold_sql="", question="") is True
    )  # subset_df renames the gold's
    with pytest.raises(EvaluatorError):  # ... and then looks up the prediction's renamed columns
        LEGACY["defog"](other_names, twice, gold_sql="", question="")
