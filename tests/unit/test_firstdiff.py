"""The first difference of a failed comparison, on row sets built by hand: rows aligned by the columns that
agree (the gold's GROUP BY / ORDER BY key, else the best-matching columns), then the smallest true difference,
with counts. Deterministic and bounded: a counting sequence proves how many rows are read."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any, overload

import pytest

from bot.base.results import ResultSet
from bot.cases.model import CompareOptions
from bot.scoring.execution import DEFAULTS, judge_results, resolve_options
from bot.scoring.firstdiff import MAX_ROWS, first_difference
from bot.scoring.rowkeys import alignment_keys, group_positions
from bot.scoring.tables import OrderCheck, TableOptions, compare_tables

INT4, NUMERIC, TEXT, DATE = 23, 1700, 25, 1082
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rs(columns: str, oids: tuple[int, ...], rows: list[tuple[Any, ...]]) -> ResultSet:
    return ResultSet(columns=tuple(c.strip() for c in columns.split(",")), type_oids=oids, rows=rows)


def compare(gold: ResultSet, pred: ResultSet, *, keys: tuple[tuple[int, ...], ...] = (), **opts: Any):
    v = compare_tables(gold, pred, opts=TableOptions(**opts), keys=lambda: keys)
    assert v.match is False
    return v


MONTHS = [dt.date(2025, m, 1) for m in range(7, 13)]
GOLD_MONTHS = rs("month, dau", (DATE, NUMERIC), [(m, Decimal(100 + i)) for i, m in enumerate(MONTHS)])


# --- a changed value in an aligned row -------------------------------------------------------------------------


def test_same_keys_one_changed_measure_names_the_key_and_both_values() -> None:
    gold = rs(
        "region, gmv",
        (TEXT, NUMERIC),
        [("ID", Decimal("1234.5")), ("TH", Decimal("99")), ("VN", Decimal("7"))],
    )
    pred = rs(
        "region, gmv",
        (TEXT, NUMERIC),
        [("VN", Decimal("7")), ("ID", Decimal("1200.0")), ("TH", Decimal("99"))],
    )
    v = compare(gold, pred)
    assert v.message == "1 of 3 rows differs; `gmv` for (region='ID'): gold 1234.5, prediction 1200.0"
    first = v.details["first_difference"]
    assert first == {
        "kind": "changed",
        "key": {"region": "'ID'"},
        "key_positions": [0],
        "column": "gmv",
        "position": 1,
        "gold": "1234.5",
        "prediction": "1200.0",
        "columns": [{"position": 1, "column": "gmv", "gold": "1234.5", "prediction": "1200.0"}],
        "row": {},
        "differing": 1,
        "total": 3,
    }
    assert (v.kind, v.flags) == ("mismatch", ())


def test_six_months_name_the_month_whose_value_differs() -> None:
    """The same six months on both sides, in another order, one value changed: the message names that month
    and its two values, never two different months."""
    rows = list(reversed(GOLD_MONTHS.rows))
    rows[2] = (rows[2][0], Decimal("555"))  # 2025-10-01
    v = compare(GOLD_MONTHS, rs("month, dau", (DATE, NUMERIC), rows))
    assert v.message == "1 of 6 rows differs; `dau` for (month=2025-10-01): gold 103, prediction 555"


def test_six_months_all_changed_pair_each_month_with_itself() -> None:
    pred = rs("month, dau", (DATE, NUMERIC), [(m, v * 30) for m, v in reversed(GOLD_MONTHS.rows)])
    v = compare(GOLD_MONTHS, pred)
    first = v.details["first_difference"]
    assert (first["differing"], first["total"], first["key"]) == (6, 6, {"month": "2025-07-01"})
    assert (first["gold"], first["prediction"]) == ("100", "3000")  # both values of July


def test_permuted_columns_are_lined_up_before_rows_are() -> None:
    pred = rs("total, m", (NUMERIC, DATE), [(v, m) for m, v in GOLD_MONTHS.rows])
    pred.rows[4] = (Decimal("1"), pred.rows[4][1])
    v = compare(GOLD_MONTHS, pred)
    assert v.message == "1 of 6 rows differs; `dau` for (month=2025-11-01): gold 104, prediction 1"


def test_positional_columns_are_explained_by_position() -> None:
    """Under `columns: positional` the order of columns is part of the answer: no other mapping is guessed."""
    pred = rs("dau, month", (NUMERIC, DATE), [(v, m) for m, v in GOLD_MONTHS.rows])
    v = compare(GOLD_MONTHS, pred, columns="positional")
    assert v.message == (
        "6 rows missing, 6 extra (of 6 gold rows); row (month=2025-07-01, dau=100) is missing from the prediction; "
        "the prediction's columns line up with the gold's in this order: month, dau"
    )


def test_subset_columns_explain_against_the_matching_prediction_column() -> None:
    gold = rs("region, n", (TEXT, INT4), [("ID", 1), ("TH", 2)])
    pred = rs("junk, region, n2", (TEXT, TEXT, INT4), [("x", "ID", 1), ("y", "TH", 3)])
    v = compare(gold, pred, columns="subset")
    assert v.message == "1 of 2 rows differs; `n` for (region='TH'): gold 2, prediction 3"


def test_several_changed_columns_are_named_then_counted() -> None:
    gold = rs("k, a, b, c", (TEXT, INT4, INT4, INT4), [("x", 1, 2, 3), ("y", 0, 0, 0)])
    pred = rs("k, a, b, c", (TEXT, INT4, INT4, INT4), [("x", 4, 5, 6), ("y", 0, 0, 0)])
    v = compare(gold, pred)
    assert v.message == (
        "1 of 2 rows differs; `a` for (k='x'): gold 1, prediction 4; `b`: gold 2, prediction 5; "
        "and 1 more column"
    )
    columns = v.details["first_difference"]["columns"]
    assert [(c["position"], c["column"], c["gold"], c["prediction"]) for c in columns] == [
        (1, "a", "1", "4"),
        (2, "b", "2", "5"),
        (3, "c", "3", "6"),
    ]


def test_the_row_with_fewest_changed_columns_comes_first() -> None:
    gold = rs("k, a, b", (TEXT, INT4, INT4), [("x", 1, 1), ("y", 2, 2)])
    pred = rs("k, a, b", (TEXT, INT4, INT4), [("x", 9, 9), ("y", 2, 7)])
    assert compare(gold, pred).message == "2 of 2 rows differ; `b` for (k='y'): gold 2, prediction 7"


def test_values_within_tolerance_are_no_difference() -> None:
    gold = rs("k, v", (TEXT, NUMERIC), [("a", 1.0), ("b", 2.0)])
    pred = rs("k, v", (TEXT, NUMERIC), [("a", 1.0 + 1e-12), ("b", 3.0)])
    assert compare(gold, pred).message == "1 of 2 rows differs; `v` for (k='b'): gold 2.0, prediction 3.0"


# --- missing and extra rows ------------------------------------------------------------------------------------


def test_a_missing_row_and_an_extra_row_are_each_named() -> None:
    gold = rs("region, gmv", (TEXT, INT4), [("ID", 5), ("PH", 6), ("TH", 7)])
    missing = compare(gold, rs("region, gmv", (TEXT, INT4), [("TH", 7), ("ID", 5)]), keys=((0,),))
    assert missing.message == (
        "row count differs: gold has 3 rows, prediction has 2; 1 row missing (of 3 gold rows); "
        "row (region='PH') is missing from the prediction (gold: `gmv` 6)"
    )
    assert missing.details["first_difference"]["kind"] == "missing"
    extra = compare(gold, rs("region, gmv", (TEXT, INT4), gold.rows + [("XX", 1)]), keys=((0,),))
    assert extra.message == (
        "row count differs: gold has 3 rows, prediction has 4; 1 row extra (of 3 gold rows); "
        "row (region='XX') is not in the gold (prediction: `gmv` 1)"
    )
    assert extra.details["first_difference"] == {
        "kind": "extra",
        "key": {"region": "'XX'"},
        "key_positions": [0],
        "column": None,
        "position": None,
        "gold": None,
        "prediction": None,
        "columns": [],
        "row": {"gmv": "1"},
        "differing": 1,
        "total": 4,
        "missing": 0,
        "extra": 1,
    }


def test_a_changed_value_is_reported_before_a_missing_row() -> None:
    gold = rs("region, gmv", (TEXT, INT4), [("ID", 5), ("PH", 6), ("TH", 7)])
    pred = rs("region, gmv", (TEXT, INT4), [("ID", 5), ("TH", 8)])
    v = compare(gold, pred, keys=((0,),))
    assert v.message.endswith(
        "1 row changed, 1 missing (of 3 gold rows); `gmv` for (region='TH'): gold 7, prediction 8"
    )


def test_a_row_repeated_more_often_on_one_side_is_counted_not_called_missing() -> None:
    gold = rs("v", (INT4,), [(1,), (1,), (2,)])
    v = compare(gold, rs("v", (INT4,), [(1,), (2,)]))
    assert v.message.endswith(
        "1 row missing (of 3 gold rows); row (v=1) is 2 times in the gold, 1 in the prediction"
    )
    assert v.details["first_difference"]["copies"] == [2, 1]


def test_a_row_within_the_tolerance_is_no_missing_row() -> None:
    gold = rs("v", (NUMERIC,), [(1.0,), (2.0,), (3.0,)])
    v = compare(gold, rs("v", (NUMERIC,), [(1.0 + 1e-12,), (2.0,), (7.0,)]))
    assert v.message == "1 of 3 rows differs; `v`: gold 3.0, prediction 7.0"


def test_an_empty_prediction_names_the_first_gold_row() -> None:
    v = compare(GOLD_MONTHS, rs("month, dau", (DATE, NUMERIC), []), keys=((0,),))
    assert v.message == (
        "row count differs: gold has 6 rows, prediction has 0; 6 rows missing (of 6 gold rows); "
        "row (month=2025-07-01) is missing from the prediction (gold: `dau` 100)"
    )


def test_a_row_whose_key_the_other_side_holds_is_named_whole() -> None:
    gold = rs("k, v", (TEXT, INT4), [("a", 1), ("b", 2)])
    v = compare(gold, rs("k, v", (TEXT, INT4), [("a", 1), ("a", 7), ("b", 2)]), keys=((0,),))
    assert v.message.endswith("1 row extra (of 2 gold rows); row (k='a', v=7) is not in the gold")


def test_several_rows_under_one_key_are_not_paired_by_guess() -> None:
    gold = rs("k, v", (TEXT, INT4), [("a", 1), ("a", 2), ("b", 3)])
    pred = rs("k, v", (TEXT, INT4), [("a", 5), ("a", 6), ("b", 3)])
    v = compare(gold, pred, keys=((0,),))
    assert (
        v.message
        == "2 rows missing, 2 extra (of 3 gold rows); row (k='a', v=1) is missing from the prediction"
    )


# --- which columns align the rows -------------------------------------------------------------------------------


def test_without_sql_keys_the_best_matching_columns_align() -> None:
    """No GROUP BY / ORDER BY: region alone pairs the changed rows but does not identify a gold row, so the
    smallest column set that does (region, month) is the key."""
    gold = rs(
        "region, month, gmv",
        (TEXT, TEXT, INT4),
        [("ID", "2025-10", 1), ("ID", "2025-11", 2), ("TH", "2025-10", 3), ("TH", "2025-11", 4)],
    )
    pred = rs(
        "region, month, gmv",
        (TEXT, TEXT, INT4),
        [("TH", "2025-11", 4), ("TH", "2025-10", 3), ("ID", "2025-11", 20), ("ID", "2025-10", 1)],
    )
    v = compare(gold, pred)
    assert v.message == "1 of 4 rows differs; `gmv` for (region='ID', month='2025-11'): gold 2, prediction 20"


def test_the_gold_sql_key_wins_over_an_equally_good_guess() -> None:
    gold = rs("total, region", (INT4, TEXT), [(10, "ID"), (20, "TH")])
    pred = rs("total, region", (INT4, TEXT), [(20, "ID"), (10, "TH")])
    guessed = compare(gold, pred)  # a tie between the columns: the earliest one
    assert guessed.message == "2 of 2 rows differ; `region` for (total=10): gold 'ID', prediction 'TH'"
    sql = "SELECT sum(x) AS total, region FROM t GROUP BY region"
    v = judge_results(gold, pred, options=DEFAULTS, gold_sql=sql)
    assert v.message == "2 of 2 rows differ; `total` for (region='ID'): gold 10, prediction 20"
    assert (v.match, v.kind, v.flags) == (False, "mismatch", ())


def test_an_order_key_that_pairs_nothing_gives_way_to_the_matching_columns() -> None:
    """ORDER BY the measure (a top-N): the measure changed, so the region aligns the rows."""
    gold = rs("region, dau", (TEXT, INT4), [("ID", 30), ("TH", 20), ("VN", 10)])
    pred = rs("region, dau", (TEXT, INT4), [("ID", 31), ("TH", 21), ("VN", 11)])
    v = judge_results(
        gold,
        pred,
        options=resolve_options(CompareOptions(order="ignore")),
        gold_sql="SELECT region, dau FROM t ORDER BY dau DESC",
    )
    assert v.message == "3 of 3 rows differ; `dau` for (region='ID'): gold 30, prediction 31"


def test_one_row_each_side_needs_no_key() -> None:
    gold = rs("cur, prev, growth", (INT4, INT4, NUMERIC), [(30, 20, Decimal("0.5"))])
    pred = rs("cur, prev, growth", (INT4, INT4, NUMERIC), [(60, 40, Decimal("0.5"))])
    assert (
        compare(gold, pred).message
        == "1 of 1 row differs; `cur`: gold 30, prediction 60; `prev`: gold 20, prediction 40"
    )


def test_without_any_agreeing_column_a_lone_row_pair_is_still_compared() -> None:
    gold = rs("v", (INT4,), [(1,), (2,), (3,)])
    v = compare(gold, rs("v", (INT4,), [(1,), (2,), (4,)]))
    assert v.message == "1 of 3 rows differs; `v`: gold 3, prediction 4"
    many = compare(gold, rs("v", (INT4,), [(1,), (5,), (6,)]))
    assert (
        many.message == "2 rows missing, 2 extra (of 3 gold rows); row (v=2) is missing from the prediction"
    )


def test_ties_between_keys_resolve_the_same_way_every_time() -> None:
    gold = rs("a, b, v", (TEXT, TEXT, INT4), [("x", "p", 1), ("y", "q", 2)])
    pred = rs("a, b, v", (TEXT, TEXT, INT4), [("y", "q", 3), ("x", "p", 4)])
    messages = {compare(gold, pred).message for _ in range(5)}
    assert messages == {"2 of 2 rows differ; `v` for (a='x'): gold 1, prediction 4"}


def test_the_message_does_not_depend_on_the_hash_seed() -> None:
    script = (
        "from bot.base.results import ResultSet; from bot.scoring.tables import TableOptions, compare_tables\n"
        "g = ResultSet(columns=('a','b','v'), type_oids=(25,25,23), rows=[(c, d, i) for i, (c, d) in "
        "enumerate(zip('abcdefgh', 'hgfedcba'))])\n"
        "p = ResultSet(columns=('a','b','v'), type_oids=(25,25,23), rows=[(c, d, i * 2) for i, (c, d) in "
        "enumerate(zip('abcdefgh', 'hgfedcba'))][::-1])\n"
        "print(compare_tables(g, p, opts=TableOptions()).message)\n"
    )
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, check=True
        )
        outs.add(done.stdout)
    assert outs == {"7 of 8 rows differ; `v` for (a='b'): gold 1, prediction 2\n"}


# --- NULLs and formatting ---------------------------------------------------------------------------------------


def test_nulls_as_values_and_as_keys() -> None:
    gold = rs("region, gmv", (TEXT, NUMERIC), [(None, Decimal("5")), ("ID", Decimal("515078.92"))])
    pred = rs("region, gmv", (TEXT, NUMERIC), [("ID", None), (None, Decimal("6"))])
    v = compare(gold, pred, keys=((0,),))
    assert v.message == "2 of 2 rows differ; `gmv` for (region=NULL): gold 5, prediction 6"
    one = compare(rs("s", (NUMERIC,), [(Decimal("515078.92"),)]), rs("s", (NUMERIC,), [(None,)]))
    assert one.message == "1 of 1 row differs; `s`: gold 515078.92, prediction NULL"


def test_a_repeated_column_name_is_told_apart_by_its_position() -> None:
    gold = rs("sum, sum", (NUMERIC, NUMERIC), [(Decimal("182559.93"), Decimal("515078.92"))])
    pred = rs("sum, sum", (NUMERIC, NUMERIC), [(Decimal("182559.93"), None)])
    v = compare(gold, pred)
    assert v.message == "1 of 1 row differs; `sum` (column 2): gold 515078.92, prediction NULL"
    first = v.details["first_difference"]
    assert (first["column"], first["position"]) == ("sum (column 2)", 1)


def test_long_values_are_cut() -> None:
    gold = rs("k, t", (TEXT, TEXT), [("a" * 100, "x" * 200), ("b", "y")])
    pred = rs("k, t", (TEXT, TEXT), [("a" * 100, "z" * 200), ("b", "y")])
    v = compare(gold, pred)
    assert len(v.message) < 360  # 80 characters for a key value, 100 for a compared value
    assert "'aaaa" in v.message and "…" in v.message


# --- bounded cost -----------------------------------------------------------------------------------------------


class CountingRows(Sequence[tuple[Any, ...]]):
    """A million rows made on demand, counting every row handed out."""

    def __init__(self, n: int, changed: int | None = None) -> None:
        self.n, self.changed, self.served = n, changed, 0

    def __len__(self) -> int:
        return self.n

    def _row(self, i: int) -> tuple[Any, ...]:
        self.served += 1
        return (i, i * 2 + (1 if i == self.changed else 0))

    @overload
    def __getitem__(self, i: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[Any, ...]]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(self.n))]
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self._row(i)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return (self._row(j) for j in range(self.n))


def test_a_million_rows_are_read_no_further_than_the_limit() -> None:
    gold, pred = CountingRows(1_000_000), CountingRows(1_000_000, changed=5)
    diff = first_difference(
        gold, pred, columns=("k", "v"), pred_columns=("k", "v"), mappings=[(0, 1)], abs_tol=1e-9, rel_tol=1e-6
    )
    assert gold.served <= MAX_ROWS and pred.served <= MAX_ROWS
    assert diff is not None
    assert diff.message() == "`v` for (k=5): gold 10, prediction 11 (in the first 10,000 rows of each side)"
    assert diff.details()["differing"] is None  # no count is claimed for rows not read


def test_beyond_the_limit_no_row_is_called_missing() -> None:
    gold, pred = CountingRows(50), CountingRows(49)
    diff = first_difference(
        gold, pred, columns=("k", "v"), pred_columns=("k", "v"), abs_tol=0, rel_tol=0, limit=20
    )
    assert diff is None and gold.served <= 20 and pred.served <= 20
    small = first_difference(
        CountingRows(50), CountingRows(49), columns=("k", "v"), pred_columns=("k", "v"), abs_tol=0, rel_tol=0
    )
    assert small is not None and small.message() == (
        "row count differs: gold has 50 rows, prediction has 49; 1 row missing (of 50 gold rows); "
        "row (k=49, v=98) is missing from the prediction"
    )


def test_order_messages_are_unchanged() -> None:
    gold = rs("k", (INT4,), [(1,), (2,)])
    v = compare_tables(gold, rs("k", (INT4,), [(2,), (1,)]), opts=TableOptions(), order=OrderCheck((0,)))
    assert v.message == "row order differs at row 1: gold has (1) there, prediction has (2)"


# --- keys from the gold's SQL -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "columns", "keys"),
    [
        (
            "SELECT region_code, sum(spend) / sum(clicks) FROM s GROUP BY region_code",
            ("region_code", "?column?"),
            ((0,),),
        ),
        (
            "SELECT date_trunc('month', d) AS m, r, sum(x) FROM t GROUP BY 1, r ORDER BY m",
            ("m", "r", "sum"),
            ((0, 1), (0,)),
        ),
        (
            "SELECT r, date_trunc('month', d), count(*) FROM t GROUP BY date_trunc('month', d), r",
            ("r", "date_trunc", "count"),
            ((0, 1),),
        ),
        (
            "SELECT r AS region, sum(x) AS s FROM t GROUP BY region ORDER BY s DESC",
            ("region", "s"),
            ((0,), (1,)),
        ),
        ("SELECT a, b, sum(x) FROM t GROUP BY ROLLUP (a, b)", ("a", "b", "sum"), ()),
        ("SELECT a, b FROM t GROUP BY a, b", ("a", "b"), ()),  # every column: nothing an exact match lacks
        ("SELECT a FROM t UNION SELECT b FROM u", ("a",), ()),
        ("SELECT 'not sql", ("x",), ()),
    ],
)
def test_alignment_keys_from_group_by_and_order_by(sql: str, columns: tuple[str, ...], keys: tuple) -> None:
    assert alignment_keys(sql, columns) == keys


def test_group_positions_skip_expressions_that_are_not_returned() -> None:
    sql = "SELECT r, sum(x) FROM t GROUP BY r, d"
    assert group_positions(sql, ("r", "sum")) == (0,)
    assert group_positions("SELECT sum(x) FROM t GROUP BY d", ("sum",)) is None
