"""A gold that parsed once is not parsed again to be loaded (bot.cases.sqlparse): the statement counts are kept
by content across runs, in the cache; what does not parse is never kept; a broken memo is read as empty."""

from __future__ import annotations

import pytest
from sqlglot.errors import ParseError

from bot.cases import sqlparse
from bot.cases.sqlparse import remembered, statement_count

SQL = "SELECT 1; SELECT 2 /* a text no other test parses */"


def test_a_text_parsed_once_is_counted_from_the_memo_in_the_next_run(tmp_path, monkeypatch) -> None:
    with remembered(tmp_path):
        assert statement_count(SQL) == 2
    assert list(tmp_path.glob("sqlglot-*.json")), "the memo is written"

    def no_parse(sql: str):
        raise AssertionError(f"parsed again: {sql}")

    monkeypatch.setattr(sqlparse, "statements", no_parse)
    with remembered(tmp_path):
        assert statement_count(SQL) == 2
    with pytest.raises(AssertionError, match="parsed again"):  # outside a memo, every count parses
        statement_count(SQL)


def test_a_text_that_does_not_parse_is_never_kept(tmp_path) -> None:
    with remembered(tmp_path), pytest.raises(ParseError):
        statement_count("SELECT FROM WHERE (")
    assert not list(tmp_path.glob("sqlglot-*.json")), "nothing was added: nothing is written"


def test_a_broken_memo_is_read_as_empty(tmp_path) -> None:
    with remembered(tmp_path):
        statement_count(SQL)
    (memo,) = tmp_path.glob("sqlglot-*.json")
    memo.write_text('{"x": "not a count", ')
    with remembered(tmp_path):
        assert statement_count(SQL) == 2
    assert '"x"' not in memo.read_text()
