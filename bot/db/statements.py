"""Splitting untrusted SQL into statements and refusing the ones that would escape the case's transaction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from sqlglot import tokens
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import TokenError

_TOKENIZER = Postgres().tokenizer_class

# Statements that end, split or leave the transaction a case runs in, or change the session's guards.
_TX_CONTROL = {"COMMIT", "END", "ROLLBACK", "ABORT", "BEGIN", "START", "SAVEPOINT", "RELEASE"}
_GUARDED_SETTINGS = {
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "transaction_timeout",
    "temp_file_limit",
    "default_transaction_read_only",
    "transaction_read_only",
    "session_authorization",
    "role",
}


class UnsafeSQL(ValueError):
    """The SQL is refused before it reaches the database; the message says why."""

    def __init__(self, message: str, *, error_class: str) -> None:
        super().__init__(message)
        self.error_class = error_class


@dataclass(frozen=True)
class Statement:
    text: str
    lead: str


def split_statements(sql: str) -> list[Statement]:
    """Top-level statements of `sql` (strings, comments and dollar quotes respected), empty ones dropped."""
    try:
        toks = _TOKENIZER().tokenize(sql)
    except TokenError as exc:
        raise UnsafeSQL(
            f"cannot tokenize the SQL: {str(exc).splitlines()[0]}", error_class="unparsable"
        ) from exc
    out: list[Statement] = []
    start_tok: tokens.Token | None = None
    last_tok: tokens.Token | None = None
    for tok in [*toks, None]:
        if tok is None or tok.token_type == tokens.TokenType.SEMICOLON:
            if start_tok is not None and last_tok is not None:
                text = sql[start_tok.start : last_tok.end + 1].strip()
                out.append(Statement(text=text, lead=start_tok.text.upper()))
            start_tok = last_tok = None
            continue
        if start_tok is None:
            start_tok = tok
        last_tok = tok
    return out


def _setting_name(text: str) -> str:
    """The setting a SET/RESET statement names, read with the tokenizer (comments, quotes, `=` handled)."""
    toks = [t for t in _TOKENIZER().tokenize(text)][1:]
    words = [t.text.strip('"').lower().replace(" ", "_") for t in toks]
    if words[:1] == ["session_authorization"] or words[:2] == ["session", "authorization"]:
        return "session_authorization"
    while words and words[0] in {"local", "session"}:
        words = words[1:]
    return words[0] if words else ""


def _check_statement(stmt: Statement) -> None:
    words = stmt.text.split(None, 3)
    second = words[1].upper() if len(words) > 1 else ""
    if stmt.lead in _TX_CONTROL or (stmt.lead == "PREPARE" and second == "TRANSACTION"):
        raise UnsafeSQL(
            f"transaction control ({stmt.lead}) is not allowed in a prediction: the case runs in a transaction "
            "that sqlcanary rolls back",
            error_class="forbidden_statement",
        )
    if stmt.lead in {"SET", "RESET"}:
        target = _setting_name(stmt.text)
        if target in _GUARDED_SETTINGS or target == "all":
            raise UnsafeSQL(
                f"{stmt.lead} {target} is not allowed in a prediction", error_class="forbidden_statement"
            )


_FENCE = re.compile(r"\s*(```|~~~)[ \t]*([\w+-]*)")  # the fence and its info string (`sql`), same line


def refuse_empty(sql: str) -> NoReturn:
    """A prediction with no statement: empty, or (what a chat model often sends) SQL in a Markdown code fence,
    named as such. The fence is not taken off: the SQL would fail wherever the agent's answer runs."""
    fence = _FENCE.match(sql)
    if fence:
        tag = fence.group(1) + fence.group(2)
        raise UnsafeSQL(
            f"the prediction is Markdown, not SQL: it starts with a code fence ({tag}); the agent must return "
            "the SQL alone (a fenced answer fails wherever the agent's SQL runs)",
            error_class="fenced",
        )
    raise UnsafeSQL("the prediction is empty", error_class="empty")


def write_statements(sql: str) -> list[str]:
    """The statements of a prediction for a case that writes, after refusing transaction control."""
    if _FENCE.match(sql):
        refuse_empty(sql)
    stmts = split_statements(sql)
    if not stmts:
        refuse_empty(sql)
    for stmt in stmts:
        _check_statement(stmt)
    return [s.text for s in stmts]
