"""A fixture is read as SQL, never as a psql script (bot.db.fixture_sql): statements and COPY data with their
lines; every psql meta-command refused, naming its line; pg_dump's owner statements passed over."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.errors import CaseFileError
from bot.db.fixture_sql import split_fixture

F = Path("fixtures/shop.sql")


def units(text: str) -> list[tuple[int, str, str | None]]:
    return [(u.line, u.sql, u.copy_data) for u in split_fixture(text, F)]


def refused(text: str) -> CaseFileError:
    with pytest.raises(CaseFileError) as info:
        split_fixture(text, F)
    return info.value


def test_statements_with_their_lines_strings_comments_and_dollar_quotes_respected():
    text = (
        "-- a comment; with a semicolon\n"
        "CREATE TABLE t (a text);\n"
        "\n"
        "INSERT INTO t VALUES ('x;y'), (E'it\\'s; \\\\'), ('a''b;');\n"
        "/* outer /* nested; */ still; */ CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$;\n"
        'CREATE TABLE "semi;colon" (a int)\n'
    )
    got = units(text)
    assert [g[0] for g in got] == [2, 4, 5, 6]
    assert got[1][1] == "INSERT INTO t VALUES ('x;y'), (E'it\\'s; \\\\'), ('a''b;');"
    assert got[2][1].endswith("$body$ SELECT 1; $body$;")
    assert got[3][1] == 'CREATE TABLE "semi;colon" (a int)'


def test_copy_from_stdin_data_is_read_to_its_end_line_and_backslashes_in_it_are_data():
    text = "CREATE TABLE t (a text);\nCOPY t (a) FROM stdin;\nx\\ty\n\\N\n\\.\nSELECT 1;\n"
    got = units(text)
    assert got[1] == (2, "COPY t (a) FROM stdin;", "x\\ty\n\\N\n")
    assert got[2][:2] == (6, "SELECT 1;")


def test_a_copy_block_without_its_end_is_refused_at_its_line():
    err = refused("SELECT 1;\nCOPY t FROM STDIN;\n1\n2\n")
    assert (err.path, err.line) == (str(F), 2)
    assert "no `\\.` line" in str(err)


@pytest.mark.parametrize(
    ("text", "line", "shown"),
    [
        ("CREATE TABLE t (a int);\n\\! id > /tmp/pwned\n", 2, "\\! id > /tmp/pwned"),
        ("SELECT 1; \\! id\n", 1, "\\! id"),
        ("SELECT 1 \\g /tmp/out\n", 1, "\\g /tmp/out"),
        ("\n\n\\copy t FROM '/etc/passwd'\n", 3, "\\copy t FROM '/etc/passwd'"),
        ("\\i /etc/passwd\n", 1, "\\i /etc/passwd"),
        ("\\c other\n", 1, "\\c other"),
        ("SELECT 1;\n\\restrict abc; \\! id\n", 2, "\\restrict abc; \\! id"),
        ("SELECT 1\n\\restrict abc\n", 2, "\\restrict abc"),
    ],
)
def test_every_psql_meta_command_is_refused_naming_its_line(text: str, line: int, shown: str):
    err = refused(text)
    assert (err.path, err.line) == (str(F), line)
    assert f"`{shown}` is a psql meta-command" in str(err)


def test_pg_dump_restrict_lines_and_owner_statements_are_passed_over():
    text = (
        "\\restrict k3y\n"
        "SET statement_timeout = 0;\n"
        "CREATE TABLE public.t (a int);\n"
        "ALTER TABLE public.t OWNER TO postgres;\n"
        'ALTER SCHEMA "s" OWNER TO "someone else";\n'
        "\\unrestrict k3y\n"
    )
    assert [g[1] for g in units(text)] == ["SET statement_timeout = 0;", "CREATE TABLE public.t (a int);"]


def test_a_statement_that_only_mentions_owner_to_is_kept():
    assert len(units("ALTER TABLE t ADD COLUMN owner_to text;\nCOMMENT ON TABLE t IS 'OWNER TO x';\n")) == 2


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("SELECT 'open\n", "string"),
        ('SELECT "open\n', "quoted identifier"),
        ("SELECT 1; /* open /* nested */\n", "comment"),
        ("SELECT $x$ open\n", "dollar quote"),
    ],
)
def test_an_unclosed_string_or_comment_is_refused_at_its_start(text: str, what: str):
    err = refused(text)
    assert err.line == 1 and f"a {what} that starts here is never closed" in str(err)


def test_dollar_signs_that_are_not_quotes():
    assert units("PREPARE p AS SELECT $1;\nSELECT a$b$c FROM t;\n")[1][1] == "SELECT a$b$c FROM t;"


@pytest.mark.parametrize(
    "stmt",
    ["COMMIT", "end", "ROLLBACK", "BEGIN", "START TRANSACTION", "SAVEPOINT s", "prepare transaction 'x'"],
)
def test_transaction_control_is_refused_at_its_line(stmt: str):
    err = refused(f"SELECT 1;\n/* c */ {stmt};\nSELECT 2;\n")
    assert err.line == 2 and "may not end or split" in str(err)
