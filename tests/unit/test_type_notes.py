"""A mismatch's message names a column that differs only by type, with both types, before anything else; and the
first rows of each side are recorded bounded (issue 25). Row sets built by hand, as psycopg2 returns them; the
same through the real CLI and PostgreSQL: tests/integration/test_mismatch_explained.py."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from bot.base.results import ResultSet, Verdict
from bot.scoring.samples import SAMPLE_COLUMNS, SAMPLE_ROWS, SAMPLE_WIDTH, sample, with_samples
from bot.scoring.tables import TableOptions, compare_tables
from bot.scoring.type_notes import type_name

INT4, INT8, NUMERIC, TEXT, VARCHAR, DATE, TIMESTAMP, TIMESTAMPTZ = 23, 20, 1700, 25, 1043, 1082, 1114, 1184
DAYS = [dt.date(2026, 1, d) for d in range(1, 7)]


def rs(columns: str, oids: tuple[int, ...], rows: list[tuple[Any, ...]]) -> ResultSet:
    return ResultSet(columns=tuple(c.strip() for c in columns.split(",")), type_oids=oids, rows=rows)


def mismatch(gold: ResultSet, pred: ResultSet, **opts: Any):
    v = compare_tables(gold, pred, opts=TableOptions(**opts))
    assert v.match is False  # the verdict is VERDICTS.md's: only its message is under test
    return v


def midnight(d: dt.date) -> dt.datetime:
    return dt.datetime.combine(d, dt.time())


def test_a_timestamp_for_a_date_is_named_first_and_the_rows_counted_apart() -> None:
    """Before: "12 of 12 rows differ; row (visit_day=2026-01-01) is missing from the prediction"."""
    gold = rs("visit_day", (DATE,), [(d,) for d in DAYS])
    pred = rs("visit_day", (TIMESTAMP,), [(midnight(d),) for d in DAYS])
    v = mismatch(gold, pred)
    assert v.message == (
        "column `visit_day`: the prediction returns timestamp, the gold date (the values are equal once cast); "
        "6 rows missing, 6 extra (of 6 gold rows); row (visit_day=2026-01-01) is missing from the prediction"
    )
    assert v.details["types"] == [{"column": "visit_day", "gold": "date", "prediction": "timestamp"}]


def test_the_type_comes_before_the_other_changed_columns() -> None:
    """Before: the cast was hidden behind "and 3 more columns"."""
    gold = rs(
        "k, a, b, c, day", (TEXT, INT4, INT4, INT4, DATE), [(str(i), 1, 2, 3, d) for i, d in enumerate(DAYS)]
    )
    pred = rs(
        "k, a, b, c, day",
        (TEXT, INT4, INT4, INT4, TIMESTAMP),
        [(str(i), 4, 5, 6, midnight(d)) for i, d in enumerate(DAYS)],
    )
    v = mismatch(gold, pred)
    assert v.message.startswith("column `day`: the prediction returns timestamp, the gold date")
    assert "and 2 more columns" in v.message  # the rest of the first difference is still said


def test_numbers_as_text_are_named_by_both_types() -> None:
    gold = rs("region, gmv", (TEXT, NUMERIC), [("ID", Decimal("1.50")), ("TH", Decimal("2"))])
    pred = rs("region, gmv", (TEXT, TEXT), [("ID", "1.5"), ("TH", "2")])
    v = mismatch(gold, pred)
    assert v.message.startswith(
        "column `gmv`: the prediction returns text, the gold numeric (the values are equal once cast); "
    )


def test_no_type_is_named_when_the_values_differ_beyond_the_type() -> None:
    gold = rs("visit_day", (DATE,), [(d,) for d in DAYS])
    later = rs("visit_day", (TIMESTAMP,), [(midnight(d) + dt.timedelta(hours=9),) for d in DAYS])
    assert "the prediction returns" not in mismatch(gold, later).message
    words = rs("v", (TEXT,), [("x",), ("y",)])
    assert "the prediction returns" not in mismatch(rs("v", (INT4,), [(1,), (2,)]), words).message


def test_types_of_one_kind_are_never_named() -> None:
    """int against bigint, text against varchar: a difference there is of values, said as such."""
    v = mismatch(rs("v", (INT4,), [(1,), (2,)]), rs("v", (INT8,), [(1,), (3,)]))
    assert v.message == "1 of 2 rows differs; `v`: gold 2, prediction 3"
    assert "types" not in v.details
    t = mismatch(rs("v", (TEXT,), [("a",), ("b",)]), rs("v", (VARCHAR,), [("a",), ("c",)]))
    assert "the prediction returns" not in t.message


def test_text_that_no_float_holds_is_kept_as_text() -> None:
    """Decimal reads "sNaN", which float() refuses: the message must still be built."""
    gold = rs("v", (NUMERIC,), [(Decimal("1"),), (Decimal("2"),)])
    pred = rs("v", (TEXT,), [("sNaN",), ("Infinity",)])
    assert "the prediction returns" not in mismatch(gold, pred).message


def test_an_instant_is_not_called_equal_to_a_naive_date() -> None:
    gold = rs("d", (DATE,), [(DAYS[0],)])
    pred = rs("d", (TIMESTAMPTZ,), [(dt.datetime(2026, 1, 1, tzinfo=dt.UTC),)])
    assert "the prediction returns" not in mismatch(gold, pred).message


def test_set_semantics_name_the_type_whatever_the_duplicates() -> None:
    gold = rs("d", (DATE,), [(DAYS[0],), (DAYS[1],)])
    pred = rs("d", (TEXT,), [("2026-01-01",), ("2026-01-01",), ("2026-01-02",)])
    v = mismatch(gold, pred, rows="set")
    assert v.message.startswith("column `d`: the prediction returns text, the gold date")


def test_type_names_cover_the_common_types_and_say_an_unknown_oid() -> None:
    assert [type_name(o) for o in (INT4, NUMERIC, DATE, TIMESTAMPTZ, 1043)] == [
        "integer",
        "numeric",
        "date",
        "timestamptz",
        "character varying",
    ]
    assert type_name(99999) == "type oid 99999"


# --- the first rows of each side, recorded for `sqlcanary show` ------------------------------------------------


def test_a_sample_is_bounded_in_rows_columns_and_width() -> None:
    width = SAMPLE_COLUMNS + 3
    long_text = "x" * (SAMPLE_WIDTH * 3)
    rows = [tuple([long_text, None, *range(width - 2)]) for _ in range(SAMPLE_ROWS * 4)]
    columns = ", ".join(f"c{i}" for i in range(width))
    side = sample(rs(columns, (TEXT, INT4, *(INT4,) * (width - 2)), rows))
    assert len(side["rows"]) == SAMPLE_ROWS and side["total"] == SAMPLE_ROWS * 4
    assert len(side["columns"]) == SAMPLE_COLUMNS and side["more_columns"] == 3
    assert all(len(r) == SAMPLE_COLUMNS for r in side["rows"])
    first = side["rows"][0]
    assert len(first[0]) == SAMPLE_WIDTH and first[0].endswith("…")
    assert first[1] == "NULL"
    assert side["types"][:2] == ["text", "integer"]


def test_a_value_spanning_lines_is_kept_on_one() -> None:
    side = sample(rs("note", (TEXT,), [("a\nb\tc",)]))
    assert side["rows"] == [["a b c"]]


def test_only_a_verdict_that_did_not_match_carries_samples() -> None:
    gold, pred = rs("v", (INT4,), [(1,)]), rs("v", (INT4,), [(2,)])
    failed = Verdict(scorer="execution", match=False, kind="mismatch", details={"alternative": 0})
    recorded = with_samples(failed, gold, pred).details
    assert recorded["alternative"] == 0
    assert recorded["samples"]["gold"]["rows"] == [["1"]]
    assert recorded["samples"]["prediction"]["rows"] == [["2"]]
    for match in (True, None):
        kept = Verdict(scorer="execution", match=match, kind="exact")
        assert "samples" not in with_samples(kept, gold, pred).details
