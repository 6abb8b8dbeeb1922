"""Splitting untrusted SQL into statements, and refusing what would escape the case's transaction (no database)."""

from __future__ import annotations

import pytest

from bot.db.statements import UnsafeSQL, split_statements, write_statements


def _texts(sql: str) -> list[str]:
    return [s.text for s in split_statements(sql)]


# --- split_statements ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1; SELECT 2", ["SELECT 1", "SELECT 2"]),
        ("SELECT 'a;b'; SELECT 2", ["SELECT 'a;b'", "SELECT 2"]),
        ("SELECT 'it''s; fine'", ["SELECT 'it''s; fine'"]),
        ("SELECT $$ a; b $$; SELECT 2", ["SELECT $$ a; b $$", "SELECT 2"]),
        ("SELECT $fn$ x; $$; y $fn$; SELECT 3", ["SELECT $fn$ x; $$; y $fn$", "SELECT 3"]),
        ("SELECT 1 -- a comment; not a split\n; SELECT 2", ["SELECT 1", "SELECT 2"]),
        ("SELECT 1 /* a; b */ + 1; SELECT 2", ["SELECT 1 /* a; b */ + 1", "SELECT 2"]),
        ("SELECT E'it\\'s; here'; SELECT 3", ["SELECT E'it\\'s; here'", "SELECT 3"]),
        # an escaped backslash ends an E-string; in a standard string a backslash is just a character
        ("SELECT E'a\\\\'; SELECT 4", ["SELECT E'a\\\\'", "SELECT 4"]),
        ("SELECT 'a\\'; SELECT 5", ["SELECT 'a\\'", "SELECT 5"]),
        ('SELECT "a;b" FROM t; SELECT 4', ['SELECT "a;b" FROM t', "SELECT 4"]),
        ('SELECT "a"";b" FROM t', ['SELECT "a"";b" FROM t']),
        (";; ;\n SELECT 1;;", ["SELECT 1"]),
        ("SELECT 1;\n-- trailing comment", ["SELECT 1"]),
        ("/* leading */ SELECT 1", ["SELECT 1"]),
        (
            "CREATE FUNCTION f() RETURNS int AS $$ BEGIN RETURN 1; END $$ LANGUAGE plpgsql; SELECT f()",
            ["CREATE FUNCTION f() RETURNS int AS $$ BEGIN RETURN 1; END $$ LANGUAGE plpgsql", "SELECT f()"],
        ),
    ],
)
def test_split_statements(sql: str, expected: list[str]) -> None:
    assert _texts(sql) == expected


def test_split_keeps_the_original_text_of_each_statement() -> None:
    sql = "select  Name\n  from T\nwhere x = 'A;B' ;\nupdate t set a=1"
    assert _texts(sql) == ["select  Name\n  from T\nwhere x = 'A;B'", "update t set a=1"]


def test_split_names_the_leading_keyword_in_upper_case() -> None:
    stmts = split_statements("with x as (select 1) select * from x; (select 2); insert into t values (1)")
    assert [s.lead for s in stmts] == ["WITH", "(", "INSERT"]


@pytest.mark.parametrize("sql", ["", "   ", ";", "-- only a comment", "/* only a comment */"])
def test_split_of_nothing_is_empty(sql: str) -> None:
    assert split_statements(sql) == []


@pytest.mark.parametrize("sql", ["SELECT 'abc", "SELECT $$abc", 'SELECT "abc', "SELECT 1 /* open"])
def test_split_refuses_unterminated_text(sql: str) -> None:
    with pytest.raises(UnsafeSQL) as info:
        split_statements(sql)
    assert info.value.error_class == "unparsable"


# --- one statement, or none, or two ----------------------------------------------------------------------------


def test_split_returns_the_one_statement_without_semicolon() -> None:
    assert [st.text for st in split_statements("  SELECT 1 ;  -- done\n")] == ["SELECT 1"]


@pytest.mark.parametrize("sql", ["", " ; ", "-- nothing here"])
def test_a_prediction_with_no_statement_is_refused(sql: str) -> None:
    with pytest.raises(UnsafeSQL) as info:
        write_statements(sql)
    assert info.value.error_class == "empty"


@pytest.mark.parametrize("sql", ["SELECT 1; SELECT 2", "SELECT 1; DROP TABLE t", "SELECT 'a\\'; COMMIT; --'"])
def test_split_finds_two_statements(sql: str) -> None:
    assert len(split_statements(sql)) == 2


def test_split_keeps_a_semicolon_inside_a_string() -> None:
    assert [st.text for st in split_statements("SELECT ';' AS semi;")] == ["SELECT ';' AS semi"]


def test_transaction_control_alone_is_refused() -> None:
    with pytest.raises(UnsafeSQL) as info:
        write_statements("COMMIT")
    assert info.value.error_class == "forbidden_statement"


# --- write_statements ------------------------------------------------------------------------------------------

FORBIDDEN = [
    "COMMIT",
    "commit",
    "END",
    "ABORT",
    "ROLLBACK",
    "ROLLBACK TO SAVEPOINT a",
    "BEGIN",
    "begin transaction",
    "START TRANSACTION",
    "SAVEPOINT a",
    "RELEASE SAVEPOINT a",
    "PREPARE TRANSACTION 'x'",
    "prepare transaction 'x'",
    "COMMIT PREPARED 'x'",
    "SET statement_timeout = 0",
    "SET statement_timeout TO 0",
    "set local STATEMENT_TIMEOUT to 0",
    "SET SESSION statement_timeout = 0",
    "SET\nstatement_timeout\n=\n0",
    "RESET statement_timeout",
    "RESET ALL",
    "reset all",
    "SET lock_timeout = 0",
    "SET transaction_timeout = 0",
    "SET default_transaction_read_only = off",
    "SET ROLE postgres",
    "RESET ROLE",
    "SET SESSION AUTHORIZATION postgres",
    "RESET SESSION AUTHORIZATION",
]


@pytest.mark.parametrize("sql", FORBIDDEN)
def test_write_statements_refuse_transaction_control_and_guarded_settings(sql: str) -> None:
    with pytest.raises(UnsafeSQL) as info:
        write_statements(sql)
    assert info.value.error_class == "forbidden_statement"


def test_a_forbidden_statement_anywhere_refuses_the_whole_prediction() -> None:
    with pytest.raises(UnsafeSQL, match=r"COMMIT"):
        write_statements("INSERT INTO t VALUES (1); COMMIT; INSERT INTO t VALUES (2)")


# `SET name=value` without spaces, a quoted name and a comment before the name all reach PostgreSQL as the same
# SET; _check_statement splits the text on whitespace and so lets them through.
SPELLED_OTHERWISE = [
    "SET statement_timeout=0",
    'SET "statement_timeout" = 0',
    "SET /* x */ statement_timeout = 0",
    "SET LOCAL idle_in_transaction_session_timeout=0",
]


@pytest.mark.parametrize("sql", SPELLED_OTHERWISE)
def test_guarded_settings_are_refused_however_they_are_spelled(sql: str) -> None:
    with pytest.raises(UnsafeSQL):
        write_statements(sql)


ALLOWED = [
    "INSERT INTO t VALUES (1)",
    "UPDATE t SET a = 1 WHERE b = 'COMMIT'",
    "DELETE FROM t",
    "CREATE TABLE x (a int)",
    "ALTER TABLE t ADD COLUMN b int",
    "DROP TABLE t",
    "CREATE INDEX ON t (a)",
    "TRUNCATE t",
    "SET search_path = public",
    "SET search_path=public",
    "SET LOCAL search_path TO x",
    "SET TIME ZONE 'UTC'",
    "PREPARE q AS SELECT 1",
    "UPDATE t SET statement_timeout = 1",
    "SELECT 1",
    "CREATE FUNCTION f() RETURNS void AS $$ BEGIN COMMIT; END $$ LANGUAGE plpgsql",
]


@pytest.mark.parametrize("sql", ALLOWED)
def test_write_statements_allow_ordinary_dml_ddl_and_search_path(sql: str) -> None:
    assert write_statements(sql) == [sql]


def test_write_statements_return_each_statement() -> None:
    sql = "CREATE TABLE x (a int); INSERT INTO x VALUES (1), (2);\nUPDATE x SET a = a + 1;"
    assert write_statements(sql) == [
        "CREATE TABLE x (a int)",
        "INSERT INTO x VALUES (1), (2)",
        "UPDATE x SET a = a + 1",
    ]


def test_write_statements_refuse_an_empty_prediction() -> None:
    with pytest.raises(UnsafeSQL) as info:
        write_statements(" ;; ")
    assert info.value.error_class == "empty"
