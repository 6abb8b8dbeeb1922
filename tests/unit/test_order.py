"""bot.scoring.order: what the gold's text says about row order, and the probes rewritten from it (benchmarks/mutation
found the rules no other test held: parentheses, quoted names, DISTINCT removal, the cached parse tree)."""

from __future__ import annotations

from bot.scoring.order import (
    OrderInfo,
    key_positions,
    order_info,
    with_limit,
    with_order_keys,
    without_distinct,
)


def positions(sql: str, *columns: str) -> tuple[int, ...] | None:
    return key_positions(sql, order_info(sql), columns)


def test_parentheses_merge_with_the_clauses_after_them() -> None:
    assert order_info("(SELECT a FROM t ORDER BY a DESC) LIMIT 3") == OrderInfo(True, ("a",), limit=3)
    assert order_info("((SELECT a FROM t ORDER BY a)) OFFSET 2") == OrderInfo(True, ("a",), offset=2)
    assert order_info("(SELECT a FROM t) ORDER BY a LIMIT 2") == OrderInfo(True, ("a",), limit=2)
    assert order_info("(SELECT a FROM t ORDER BY a LIMIT 5)") == OrderInfo(True, ("a",), limit=5)
    assert order_info("(SELECT a FROM t UNION SELECT b FROM u) ORDER BY 1") == OrderInfo(True, ("1",))
    # a clause given twice is an error to PostgreSQL: nothing is sure, no order is assumed
    assert order_info("(SELECT a FROM t ORDER BY a LIMIT 5) LIMIT 3") == OrderInfo(False, limit=3)
    assert order_info("(VALUES (1), (2)) LIMIT 1") == OrderInfo(False, limit=1)
    assert with_limit("(SELECT a FROM t ORDER BY a) LIMIT 3", 4) == "SELECT a FROM t ORDER BY a LIMIT 4"
    assert (
        with_limit("((SELECT a FROM t ORDER BY a)) OFFSET 2", 4)
        == "SELECT a FROM t ORDER BY a LIMIT 4 OFFSET 2"
    )


def test_an_unordered_query_keeps_its_limit_offset_and_distinct() -> None:
    assert order_info("SELECT DISTINCT a FROM t LIMIT 3 OFFSET 1") == OrderInfo(
        False, limit=3, offset=1, has_distinct=True
    )
    assert order_info("SELECT a FROM t LIMIT ALL") == OrderInfo(False)
    assert order_info("SELECT a FROM t LIMIT $1") == OrderInfo(False)
    assert order_info("not sql at all (") == OrderInfo(False)
    assert order_info("SELECT a FROM t LIMIT 'x'") == OrderInfo(False)  # not a number: unknown, no crash


def test_distinct_is_a_select_s_only() -> None:
    """UNION removes duplicates too, but `has_distinct` is about SELECT DISTINCT."""
    union = order_info("SELECT a FROM t UNION SELECT a FROM u ORDER BY 1")
    assert union.ordered and not union.has_distinct
    assert not order_info("SELECT a FROM t UNION SELECT a FROM u").has_distinct
    assert order_info("SELECT DISTINCT a FROM t ORDER BY a").has_distinct


def test_keys_are_written_in_postgresql() -> None:
    assert order_info("SELECT a FROM t ORDER BY a ->> 'k', a ~ 'x'").keys == ("a ->> 'k'", "a ~ 'x'")


def test_key_positions_follow_postgresql_name_folding() -> None:
    assert positions('SELECT "Name" FROM t ORDER BY "Name"', "Name") == (0,)
    assert positions("SELECT Name FROM t ORDER BY NAME", "name") == (0,)
    assert positions('SELECT "Name", name FROM t ORDER BY name', "Name", "name") == (1,)
    assert positions("SELECT a, b FROM t ORDER BY 2, 1", "a", "b") == (1, 0)
    assert positions("SELECT a, b FROM t ORDER BY 3", "a", "b") is None
    assert positions("SELECT lower(name) AS n FROM t ORDER BY lower(name)", "n") == (0,)
    assert positions("SELECT lower(name) AS n FROM t ORDER BY name", "n") is None
    assert positions("SELECT 'name' AS x FROM t ORDER BY name", "x") is None  # a text, not the column
    assert positions("SELECT t.a AS x FROM t ORDER BY t.a", "x") == (0,)
    assert positions("SELECT u.a AS x FROM t, u ORDER BY t.a", "x") is None
    assert positions("SELECT * FROM t ORDER BY b", "a", "b") == (1,)
    assert positions("SELECT * FROM t ORDER BY b + 1", "a", "b") is None
    assert positions("SELECT a FROM t UNION SELECT b FROM u ORDER BY a", "a") == (0,)
    assert positions("SELECT a FROM t", "a") == ()


def test_order_key_probe() -> None:
    assert with_order_keys('SELECT a + 1 AS "X" FROM t ORDER BY "X"') == (
        'SELECT a + 1 AS "X", a + 1 AS __sqlcanary_k0 FROM t ORDER BY "X"'
    )
    assert with_order_keys("SELECT a + 1 AS Big FROM t ORDER BY big") == (
        "SELECT a + 1 AS Big, a + 1 AS __sqlcanary_k0 FROM t ORDER BY big"
    )
    assert with_order_keys("SELECT a, b AS x FROM t ORDER BY 1, 2, c") == (
        "SELECT a, b AS x, a AS __sqlcanary_k0, b AS __sqlcanary_k1, c AS __sqlcanary_k2 FROM t ORDER BY 1, 2, c"
    )
    assert with_order_keys("SELECT a + 1, b FROM t ORDER BY 1") == (
        "SELECT a + 1, b, a + 1 AS __sqlcanary_k0 FROM t ORDER BY 1"
    )
    for starred in (
        "SELECT * FROM t ORDER BY 1",
        "SELECT t.* FROM t ORDER BY 1",
        "SELECT *, a FROM t ORDER BY 2",
    ):
        assert with_order_keys(starred) is None, starred  # which column an ordinal means is unknown
    assert with_order_keys("SELECT a, b FROM t ORDER BY 3") is None
    assert with_order_keys("SELECT DISTINCT a FROM t ORDER BY a") is None
    assert with_order_keys("SELECT a FROM t") is None


def test_probes_leave_the_cached_parse_tree_alone() -> None:
    sql = "SELECT a FROM t ORDER BY a LIMIT 2"
    assert with_limit(sql, 3) == "SELECT a FROM t ORDER BY a LIMIT 3"
    assert with_order_keys(sql) == "SELECT a, a AS __sqlcanary_k0 FROM t ORDER BY a LIMIT 2"
    assert with_limit(sql, 5) == "SELECT a FROM t ORDER BY a LIMIT 5"
    assert order_info(sql).limit == 2


def test_without_distinct_removes_the_keyword_only() -> None:
    assert without_distinct("SELECT DISTINCT a FROM t UNION SELECT b FROM u") == (
        "SELECT a FROM t UNION SELECT b FROM u"
    )
    assert without_distinct("SELECT COUNT(DISTINCT a) FROM t") == "SELECT COUNT(a) FROM t"
    assert (
        without_distinct("SELECT DISTINCT ON (a) a, b FROM t ORDER BY a") == "SELECT a, b FROM t ORDER BY a"
    )
    assert without_distinct("SELECT DISTINCT a FROM t WHERE b ~ 'x' AND c::text ILIKE 'y'") == (
        "SELECT a FROM t WHERE b ~ 'x' AND CAST(c AS TEXT) ILIKE 'y'"
    )
    assert without_distinct("select  a from t") == "select  a from t"  # nothing to remove: the text as given
    assert without_distinct("not sql (") == "not sql ("
