"""bot.audit's pure parts: the sqlglot rewrites of the order_ties probes, the tie logic on rows, the literals a
gold's WHERE compares with a column, the nearest stored values, loose sameness and column-choice siblings."""

from __future__ import annotations

import datetime as dt
import decimal

import sqlglot

from bot.audit.alternatives import column_choice_siblings, sibling_groups
from bot.audit.cut_sql import LOOK_PAST, Cut, distinct_on_probe, keyed_probe, the_cut, widened
from bot.audit.literals import Comparison, likeness, literal_comparisons, nearest_values
from bot.audit.loose import compatible, loose_value, shared_projection
from bot.audit.model import plain
from bot.audit.ties import distinct_on_ties, split_ties

SCHEMA = {
    ("public", "customers"): {"id": "integer", "name": "text", "country": "text"},
    ("public", "orders"): {"id": "integer", "customer_id": "integer", "status": "character varying"},
    ("sales", "regions"): {"code": "text", "name": "text"},
}


def _parse(sql: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


# -- the cut and its probes ------------------------------------------------------------------------------------
def test_the_cut_reads_limit_offset_and_fetch_first():
    assert the_cut("SELECT a FROM t ORDER BY a LIMIT 3 OFFSET 2") == Cut(limit=3, offset=2, ordered=True)
    assert the_cut("SELECT a FROM t FETCH FIRST 4 ROWS ONLY") == Cut(limit=4, offset=0, ordered=False)
    assert the_cut("SELECT a FROM t ORDER BY a") is None
    assert the_cut("SELECT a FROM t LIMIT ALL") is None


def test_widened_drops_the_offset_and_reads_past_the_cut():
    probe = _parse(widened("SELECT a FROM t ORDER BY a LIMIT 3 OFFSET 2", Cut(3, 2)) or "")
    assert probe.args.get("offset") is None
    assert int(probe.args["limit"].expression.this) == 3 + 2 + LOOK_PAST


def test_keyed_probe_appends_the_sort_keys_behind_the_outputs():
    probe = keyed_probe("SELECT name, count(*) AS n FROM t GROUP BY name ORDER BY n DESC, 1 LIMIT 2", Cut(2))
    assert probe is not None and (probe.n_out, probe.n_keys) == (2, 2)
    select = _parse(probe.sql)
    outputs = [e.sql(dialect="postgres") for e in select.expressions]
    assert outputs[2:] == ["COUNT(*) AS __sqlcanary_k0", "name AS __sqlcanary_k1"]
    # DISTINCT would change the rows once keys are added: no keyed probe
    assert keyed_probe("SELECT DISTINCT a FROM t ORDER BY a LIMIT 1", Cut(1)) is None


def test_distinct_on_probe_removes_distinct_on_and_appends_its_expressions():
    probe = distinct_on_probe(
        "SELECT DISTINCT ON (country) country, name FROM c ORDER BY country, id LIMIT 5"
    )
    assert probe is not None and (probe.n_out, probe.n_distinct, probe.n_keys) == (2, 1, 2)
    tree = _parse(probe.sql)
    assert tree.args.get("distinct") is None and tree.args.get("limit") is None
    assert distinct_on_probe("SELECT DISTINCT country FROM c") is None


# -- ties on rows ------------------------------------------------------------------------------------------------
def test_a_limit_cutting_through_equal_keys_with_different_rows_is_a_tie():
    rows = [("a", 3, 3), ("b", 2, 2), ("c", 2, 2), ("d", 1, 1)]  # output, output, key
    ties = split_ties(rows, n_out=2, key_cols=(2,), start=0, stop=2)
    assert len(ties) == 1 and ties[0].boundary == "limit"
    assert ties[0].kept == (("b", 2),) and ties[0].left_out == (("c", 2),)


def test_a_unique_key_or_identical_tied_rows_is_not_a_tie():
    assert split_ties([("a", 3), ("b", 2), ("c", 1)], n_out=1, key_cols=(1,), start=0, stop=2) == []
    same = [("a", 3), ("x", 2), ("x", 2)]
    assert split_ties(same, n_out=1, key_cols=(1,), start=0, stop=2) == []


def test_an_offset_cutting_through_a_tie_is_found_at_the_start_of_the_window():
    rows = [("a", 1), ("b", 1), ("c", 2), ("d", 3)]
    ties = split_ties(rows, n_out=1, key_cols=(1,), start=1, stop=3)
    assert [t.boundary for t in ties] == ["offset"]


def test_a_limit_without_order_by_ties_every_row():
    assert split_ties([("a",), ("b",)], n_out=1, key_cols=(), start=0, stop=1)[0].left_out == (("b",),)
    assert split_ties([("a",)], n_out=1, key_cols=(), start=0, stop=1) == []  # nothing was cut


def test_distinct_on_groups_whose_first_rows_tie():
    # outputs (country, name), then the DISTINCT ON value, then the ORDER BY key
    rows = [("UK", "Ada", "UK", "UK"), ("US", "Grace", "US", "US"), ("US", "Mae", "US", "US")]
    ties = distinct_on_ties(rows, n_out=2, n_distinct=1, n_keys=1)
    assert len(ties) == 1 and ties[0].key == ("US",)
    ordered = [("US", "Grace", "US", 1), ("US", "Mae", "US", 2)]  # a second key that breaks the tie
    assert distinct_on_ties(ordered, n_out=2, n_distinct=1, n_keys=1) == []


# -- literals ----------------------------------------------------------------------------------------------------
def test_literals_compared_with_one_table_column_are_resolved():
    sql = (
        "SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id "
        "WHERE c.country IN ('US', 'UK') AND status = 'shipped' AND lower(c.name) LIKE 'ada'"
    )
    found = {(x.table, x.column, x.literal, x.op, x.wrapper) for x in literal_comparisons(sql, SCHEMA)}
    assert found == {
        ("customers", "country", "US", "IN", None),
        ("customers", "country", "UK", "IN", None),
        ("orders", "status", "shipped", "=", None),
        ("customers", "name", "ada", "LIKE", "lower"),
    }


def test_literals_are_skipped_when_the_column_is_ambiguous_computed_or_not_text():
    sql = (
        "SELECT 1 FROM customers c JOIN sales.regions r ON true WHERE name = 'x' "  # two tables have `name`
        "AND c.id = '3' AND c.country LIKE 'U%' AND r.code = 'EU' AND c.name || 'a' = 'ya'"
    )
    found = [(x.schema, x.table, x.column, x.literal) for x in literal_comparisons(sql, SCHEMA)]
    assert found == [("sales", "regions", "code", "EU")]  # the schema-qualified table resolves
    cte = "WITH t AS (SELECT name FROM customers) SELECT * FROM t WHERE name = 'x'"
    assert literal_comparisons(cte, SCHEMA) == []  # a CTE's column is not a stored column


def test_a_subquery_literal_resolves_in_its_own_scope():
    sql = "SELECT name FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE status = 'open')"
    assert [(x.table, x.column) for x in literal_comparisons(sql, SCHEMA)] == [("orders", "status")]


def test_comparison_probes_quote_the_literal():
    c = Comparison("public", "customers", "name", "O'Brien", "=")
    assert "'O''Brien'" in c.exists_sql()
    assert _parse(c.values_sql(10)).args["limit"] is not None


def test_nearest_values_put_case_and_space_variants_first():
    assert (
        nearest_values("united states", ["Canada", "United States ", "United Kingdom"])[0] == "United States "
    )
    assert likeness("us", "US") == 1.0 and likeness("us", "FI") < 0.5


# -- loose sameness of alternatives ----------------------------------------------------------------------------
def test_format_variants_of_a_month_and_a_number_are_loosely_equal():
    month = {loose_value("2023-03"), loose_value("2023-03-01"), loose_value(dt.date(2023, 3, 1))}
    month.add(loose_value(dt.datetime(2023, 3, 1, tzinfo=dt.UTC)))
    assert month == {"2023-03"}
    assert loose_value(decimal.Decimal("1.0000001")) == loose_value(1.0)
    assert compatible([("a", 1)], [("a", 1), ("b", 0)])  # one reading within the other
    assert not compatible([("a", 1)], [("a", 2)])


def test_shared_projection_compares_what_both_results_say():
    a = shared_projection(("name", "n"), [("Ada", 3)], ("id", "N"), [(1, 3)])
    assert a == ([(3,)], [(3,)])
    by_position = shared_projection(("month", "x"), [("Jan", 10)], ("m", "y"), [(1, 10)])
    assert by_position == ([(10,)], [(10,)])
    assert shared_projection(("a",), [("x",)], ("b",), [("y",)]) is None


def test_column_choice_variants_are_siblings_and_other_alternatives_are_not():
    golds = (
        "SELECT author.name FROM author GROUP BY author.name",
        "SELECT author.aid FROM author GROUP BY author.aid",
        "SELECT author.name, author.aid FROM author GROUP BY author.name, author.aid",
        "SELECT name FROM author WHERE aid > 3",
    )
    assert column_choice_siblings(golds[0], golds[1])
    assert not column_choice_siblings(golds[0], golds[3])
    assert not column_choice_siblings("SELECT a FROM t ORDER BY a DESC", "SELECT a FROM t ORDER BY a ASC")
    assert sibling_groups(golds) == [[0, 1, 2], [3]]


def test_plain_makes_fetched_values_json_values():
    assert plain(decimal.Decimal("2.50")) == 2.5 and plain(decimal.Decimal("3")) == 3
    assert plain(dt.date(2024, 1, 2)) == "2024-01-02" and plain((1, None)) == [1, None]
