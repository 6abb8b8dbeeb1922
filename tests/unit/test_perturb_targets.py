"""What a perturbed copy targets, read from the gold with sqlglot (issue 18), and the values it writes there.
No database: the targets are pure; the safety rules (the gold is untrusted) are checked by re-parsing every text."""

from __future__ import annotations

import json

import pytest
import sqlglot
from sqlglot import exp

from bot.scoring.perturb_sql import is_safe_condition, is_safe_literal
from bot.scoring.perturb_targets import Target, boundary_values, perturb_targets


def kinds(sql: str, kind: str) -> list[Target]:
    return [t for t in perturb_targets(sql) if t.kind == kind]


# --- what is found --------------------------------------------------------------------------------------------

JOINED = (
    "SELECT a.name, COUNT(w.pid) AS papers FROM author AS a JOIN writes w ON a.aid = w.aid "
    "WHERE w.year >= 2020 AND a.score > 4.5 GROUP BY a.name ORDER BY papers DESC, a.name"
)


def test_aliases_resolve_to_the_real_tables():
    found = perturb_targets(JOINED)
    assert {t.table for t in found} == {"author", "writes"}
    assert Target("boundary", "writes", "year", "2020", None) in found
    assert Target("boundary", "author", "score", "4.5", None) in found
    assert Target("orphan", "author", "aid", None, "score > 4.5", ("writes", "aid")) in found
    assert Target("orphan", "writes", "aid", None, "year >= 2020", ("author", "aid")) in found
    assert Target("null", "writes", "pid", None, "year >= 2020") in found  # COUNT(w.pid)
    assert Target("duplicate", "author", None, None, "score > 4.5") in found
    assert Target("tie", "author", "name", None, "score > 4.5") in found
    assert not [t for t in found if t.kind == "tie" and t.column == "papers"]  # an aggregate, no column


def test_schema_qualified_tables_keep_their_schema_and_fold_like_postgres():
    found = perturb_targets(
        "SELECT m.name FROM consumer_div.Merchants m JOIN consumer_div.coupons c ON m.mid = c.merchant_id "
        "WHERE m.Status = 'active'"
    )
    assert Target("boundary", "consumer_div.merchants", "status", "'active'", None) in found
    assert ("consumer_div.coupons", "merchant_id") in {t.partner for t in found}


def test_quoted_identifiers_stay_quoted():
    found = perturb_targets('SELECT 1 FROM "Orders" o WHERE o."Total" > 10 AND o."x""; DROP" = 1')
    assert Target("boundary", '"Orders"', '"Total"', "10", '"x""; DROP" = 1') in found


def test_cte_names_and_derived_tables_are_no_targets():
    found = perturb_targets(
        "WITH recent AS (SELECT s.id, s.price FROM sales s WHERE s.sale_date >= '2023-01-01') "
        "SELECT r.id FROM recent r JOIN (SELECT id FROM cars) AS c ON c.id = r.id WHERE r.price > 100 "
        "ORDER BY r.price"
    )
    assert {t.table for t in found} == {"sales", "cars"}
    assert Target("boundary", "sales", "sale_date", "'2023-01-01'", None) in found
    assert Target("period", "sales", "sale_date", "'2023-01-01'", None) in found
    assert not [t for t in found if t.value == "100" or t.kind == "tie"]


def test_an_unqualified_column_belongs_to_the_only_table_and_is_skipped_when_ambiguous():
    single = perturb_targets("SELECT name FROM restaurant WHERE rating >= 4")
    assert Target("boundary", "restaurant", "rating", "4", None) in single
    ambiguous = perturb_targets("SELECT name FROM a JOIN b ON a.id = b.aid WHERE price > 5")
    assert [t for t in ambiguous if t.kind == "boundary"] == []
    assert {t.kind for t in ambiguous} == {"duplicate", "null", "orphan"}


def test_every_comparison_kind_gives_boundaries():
    found = perturb_targets(
        "SELECT * FROM t WHERE a <> 3 AND b BETWEEN 1 AND 9 AND c IN ('x', 'y') AND d LIKE 'ab%' "
        "AND e ILIKE '%mid%' AND -2 < f AND g = CAST('7' AS INT)"
    )
    values = {(t.column, t.value) for t in found if t.kind == "boundary"}
    assert values == {
        ("a", "3"),
        ("b", "1"),
        ("b", "9"),
        ("c", "'x'"),
        ("c", "'y'"),
        ("d", "'ab'"),  # the LIKE prefix; '%mid%' has none
        ("f", "-2"),
        ("g", "CAST('7' AS INT)"),
    }
    assert {t.column for t in found if t.kind == "null"} == set("abcdefg")


def test_dates_and_date_functions_give_period_targets():
    found = perturb_targets(
        "SELECT COUNT(id) FROM sales WHERE date_trunc('month', sale_date) = '2023-03-01' "
        "AND EXTRACT(YEAR FROM paid_at) = 2023 AND created >= CURRENT_DATE - INTERVAL '6 days' "
        "AND to_char(shipped, 'YYYY') = '2023' AND price > 10"
    )
    periods = {(t.column, t.value) for t in found if t.kind == "period"}
    assert periods == {
        ("sale_date", "'2023-03-01'"),
        ("paid_at", "2023"),
        ("created", None),
        ("shipped", "'2023'"),
    }
    boundaries = {t.column for t in found if t.kind == "boundary"}
    assert boundaries == {
        "sale_date",
        "price",
    }  # EXTRACT/to_char change the domain; CURRENT_DATE is no literal


def test_joins_written_as_in_exists_or_where_give_orphans_with_partners():
    found = perturb_targets(
        "SELECT c.name FROM customers c, orders o WHERE c.id = o.customer_id AND c.id IN "
        "(SELECT p.customer_id FROM payments p) AND EXISTS (SELECT 1 FROM reviews r WHERE r.cid = c.id)"
    )
    orphans = {(t.table, t.column, t.partner) for t in found if t.kind == "orphan"}
    assert orphans == {
        ("customers", "id", ("orders", "customer_id")),
        ("orders", "customer_id", ("customers", "id")),
        ("customers", "id", ("payments", "customer_id")),
        ("payments", "customer_id", ("customers", "id")),
        ("reviews", "cid", ("customers", "id")),
        ("customers", "id", ("reviews", "cid")),
    }


def test_group_by_over_a_joined_table_targets_a_parent_without_children():
    found = perturb_targets(
        "SELECT d.name, COUNT(e.id) FROM departments d LEFT JOIN employees e ON e.dept_id = d.id GROUP BY d.name"
    )
    assert Target("orphan", "departments", "id", None, None, ("employees", "dept_id")) in found


def test_ties_follow_output_aliases_positions_and_windows():
    found = kinds(
        "SELECT s.name AS who, s.score, RANK() OVER (ORDER BY s.joined) FROM students s ORDER BY who, 2 DESC",
        "tie",
    )
    assert [t.column for t in found] == ["name", "score", "joined"]


def test_where_holds_the_other_conjuncts_over_the_same_table_only():
    found = perturb_targets(
        "SELECT * FROM orders o JOIN users u ON u.id = o.uid AND u.active WHERE o.total > 100 "
        "AND o.status IN ('paid', 'sent') AND (o.kind = 'a' OR o.kind = 'b') AND u.age < o.total"
    )
    target = next(t for t in found if t.kind == "boundary" and t.column == "total")
    assert target.where == "status IN ('paid', 'sent') AND (kind = 'a' OR kind = 'b')"
    assert next(t for t in found if t.kind == "duplicate" and t.table == "users").where == "active"


def test_targets_are_deduplicated_in_a_stable_order():
    first = perturb_targets(JOINED + " LIMIT 3")
    assert first == perturb_targets(JOINED + " LIMIT 3")
    assert len(set(first)) == len(first)


@pytest.mark.parametrize("sql", ["", "SELEC nonsense (", "SELECT 1; SELECT 2", "SELECT 'no table' AS answer"])
def test_odd_sql_gives_no_targets_and_no_exception(sql):
    assert perturb_targets(sql) == ()


# --- safety: the texts end up in UPDATE/INSERT statements ------------------------------------------------------

HOSTILE = (
    "SELECT * FROM users u WHERE u.age > 30 AND pg_read_file('/etc/passwd') = 'x' "
    "AND u.id IN (SELECT id FROM secrets) AND set_config('role', 'postgres', false) = 'postgres' "
    "AND u.name = (SELECT current_user) AND u.nick = pg_read_file('/etc/shadow') "
    "AND u.kind = CAST('1' AS evil_type) AND u.city = 'Paris'; "
)


def test_hostile_conjuncts_are_dropped_and_never_rendered():
    found = perturb_targets(HOSTILE)
    assert found, "the harmless predicates still give targets"
    texts = " ".join(f"{t.value} {t.where}" for t in found).lower()
    for word in ("pg_read_file", "set_config", "secrets", "current_user", "select", "evil_type", "passwd"):
        assert word not in texts
    age = next(t for t in found if t.kind == "boundary" and t.column == "age")
    assert age.where == "city = 'Paris'"
    assert not [t for t in found if t.kind == "boundary" and t.column in ("nick", "name", "kind")]


def test_string_literals_are_re_rendered_with_their_quotes_escaped():
    found = perturb_targets(
        "SELECT * FROM people p WHERE p.last = 'O''Brien' AND p.first LIKE 'D''Ar%' AND p.note = $$it's$$ "
        "AND p.path = 'C:\\dir\\'"
    )
    values = {t.column: t.value for t in found if t.kind == "boundary"}
    assert values == {"last": "'O''Brien'", "first": "'D''Ar'", "note": "'it''s'", "path": "'C:\\dir\\'"}
    for value in values.values():
        parsed = sqlglot.parse_one(value, read="postgres")
        assert isinstance(parsed, exp.Literal) and parsed.is_string
    where = next(t for t in found if t.kind == "boundary" and t.column == "note").where or ""
    assert "last = 'O''Brien'" in where and "first LIKE 'D''Ar%'" in where


def _assert_safe(target: Target) -> None:
    if target.value is not None:
        assert is_safe_literal(sqlglot.parse_one(target.value, read="postgres")), target
    if target.where is not None:
        condition = sqlglot.parse_one(target.where, read="postgres")
        assert is_safe_condition(condition) and not any(c.table for c in condition.find_all(exp.Column)), (
            target
        )


def test_every_text_re_parses_as_what_the_allowlist_permits():
    for sql in (HOSTILE, JOINED):
        for target in perturb_targets(sql):
            _assert_safe(target)


# --- boundary_values -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "hint", "expected"),
    [
        ("100", None, ("100", "99", "101")),
        ("100", "integer", ("100", "99", "101")),
        ("100", "numeric(10,2)", ("100", "99.99", "100.01")),
        ("-5", None, ("-5", "-6", "-4")),
        ("0", None, ("0", "-1", "1")),
        ("4.5", None, ("4.5", "4.49", "4.51")),
        ("4.5", "bigint", ("4", "5")),
        ("'2023-01-01'", None, ("'2023-01-01'", "'2022-12-31'", "'2023-01-02'")),
        (
            "CAST('2024-03-01' AS DATE)",
            None,
            tuple(f"CAST('{d}' AS DATE)" for d in ("2024-03-01", "2024-02-29", "2024-03-02")),
        ),
        (
            "'2023-01-01'",
            "timestamp without time zone",
            ("'2023-01-01'", "'2022-12-31 23:59:59'", "'2023-01-01 00:00:01'"),
        ),
        (
            "'2023-01-01 10:00:00'",
            None,
            ("'2023-01-01 10:00:00'", "'2023-01-01 09:59:59'", "'2023-01-01 10:00:01'"),
        ),
        ("'2023-01-01'", "text", ("'2023-01-01'",)),
        ("'O''Brien'", None, ("'O''Brien'",)),
        ("TRUE", None, ("TRUE",)),
    ],
)
def test_boundary_values_give_c_then_c_minus_and_plus_epsilon(value, hint, expected):
    assert boundary_values(value, hint) == expected


def test_period_edges_are_expressions_of_the_column_or_the_constant():
    assert boundary_values("sale_date", "period") == (
        "DATE_TRUNC('MONTH', CAST(sale_date AS TIMESTAMP))",
        "DATE_TRUNC('MONTH', CAST(sale_date AS TIMESTAMP)) + INTERVAL '1 MONTH' - INTERVAL '1 MICROSECOND'",
        "DATE_TRUNC('YEAR', CAST(sale_date AS TIMESTAMP))",
        "DATE_TRUNC('YEAR', CAST(sale_date AS TIMESTAMP)) + INTERVAL '1 YEAR' - INTERVAL '1 MICROSECOND'",
        "DATE_TRUNC('DAY', CAST(sale_date AS TIMESTAMP)) AT TIME ZONE 'UTC'",
    )
    edges = boundary_values("'2023-03-15'", "period")
    assert len(edges) == 5 and all("CAST('2023-03-15' AS TIMESTAMP)" in e for e in edges)
    assert boundary_values("3", "period") == ()  # EXTRACT(MONTH ...) = 3: no date to take edges of
    assert boundary_values("'abc'", "period") == ()


@pytest.mark.parametrize(
    "value",
    [
        "1; DROP TABLE users",
        "pg_sleep(10)",
        "(SELECT 1)",
        "x + 1",
        "t.col",
        "",
        "'unterminated",
        "CAST('1' AS evil)",
    ],
)
def test_boundary_values_refuse_anything_but_one_literal(value):
    assert boundary_values(value, None) == ()
    assert boundary_values(value, "period") == ()


# --- the defog golds -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def defog(shared):
    path = shared / "datasets" / "defog"
    if not (path / "cases.jsonl").exists():
        pytest.skip(f"defog data not found at {path}")
    cases = [json.loads(line) for line in (path / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    columns = {}
    for name in {case["db"] for case in cases}:
        tables = json.loads((path / "metadata" / f"{name}.json").read_text())["table_metadata"]
        columns[name] = {t.lower(): {c["column_name"].lower() for c in cols} for t, cols in tables.items()}
    return cases, columns


def test_every_defog_gold_that_reads_a_table_gets_real_safe_targets(defog):
    cases, columns = defog
    assert len(cases) == 419
    with_targets = 0
    for case in cases:
        found = perturb_targets(case["gold_sql_variants"][0])
        with_targets += bool(found)
        schema = columns[case["db"]]
        for target in found:
            _assert_safe(target)
            assert target.column is None or target.column in schema[target.table], (case["id"], target)
            if target.partner:
                assert target.partner[1] in schema[target.partner[0]], (case["id"], target)
    # Measured: all 314 golds that read a table; the 105 `idk` golds are constants (SELECT 'sorry' AS answer).
    readers = sum(not case["id"].startswith("idk") for case in cases)
    assert with_targets == readers == 314
