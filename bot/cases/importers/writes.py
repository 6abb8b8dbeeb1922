"""Which tables a script writes, found with sqlglot, and the checks that compare them after gold and prediction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bot.cases.importers.common import quiet_sqlglot, split_statements

WRITE_NODES = (exp.Insert, exp.Update, exp.Delete, exp.Merge)
RELATION_KINDS = {"TABLE", "VIEW", "MATERIALIZED VIEW"}


@dataclass(frozen=True)
class TableRef:
    """A table as the script names it: `sql` to query it, `schema`/`name` as PostgreSQL folds them."""

    sql: str
    schema: str | None
    name: str


@dataclass(frozen=True)
class WriteTargets:
    """Tables whose rows the script leaves changed, tables it leaves dropped, and statements sqlglot could not read."""

    written: tuple[TableRef, ...]
    dropped: tuple[TableRef, ...]
    unreadable: int


def find_write_targets(statements: Sequence[str]) -> WriteTargets:
    """Walk the statements in order; a table's last action (write or drop) decides what is checked."""
    last: dict[tuple[str | None, str], tuple[TableRef, str]] = {}
    unreadable = 0
    for sql in statements:
        try:
            with quiet_sqlglot():
                parsed = sqlglot.parse(sql, read="postgres")
        except (ParseError, TokenError):
            unreadable += 1
            continue
        for stmt in parsed:
            if not isinstance(stmt, exp.Expression):
                continue
            if isinstance(stmt, exp.Command):
                unreadable += 1
            for ref, action in _actions(stmt):
                last.pop((ref.schema, ref.name), None)
                last[(ref.schema, ref.name)] = (ref, action)
    written = tuple(ref for ref, action in last.values() if action == "write")
    dropped = tuple(ref for ref, action in last.values() if action == "drop")
    return WriteTargets(written, dropped, unreadable)


def query_flags(scripts: Sequence[str]) -> list[tuple[str, bool]]:
    """Each statement of the scripts, and whether it is a query (SELECT, set operation, VALUES)."""
    out = []
    for script in scripts:
        for stmt in split_statements(script):
            try:
                with quiet_sqlglot():
                    parsed = sqlglot.parse_one(stmt, read="postgres")
            except (ParseError, TokenError):
                parsed = None
            out.append((stmt, isinstance(parsed, exp.Query)))
    return out


def table_checks(targets: WriteTargets) -> list[dict[str, str]]:
    """One check per table: its rows when written, its presence in information_schema when dropped."""
    checks = [
        {"name": f"rows of {ref.sql}", "sql": f"SELECT * FROM {ref.sql} ORDER BY 1", "expect": "gold"}
        for ref in targets.written
    ]
    for ref in targets.dropped:
        where = f"table_name = {_literal(ref.name)}"
        if ref.schema is not None:
            where += f" AND table_schema = {_literal(ref.schema)}"
        checks.append(
            {
                "name": f"{ref.sql} dropped",
                "sql": f"SELECT table_schema, table_name FROM information_schema.tables WHERE {where} ORDER BY 1, 2",
                "expect": "gold",
            }
        )
    return checks


def _actions(stmt: exp.Expression) -> Iterator[tuple[TableRef, str]]:
    for node in stmt.find_all(*WRITE_NODES):
        yield from _refs(node.this, "write")
    kind = str(stmt.args.get("kind") or "").upper()
    if isinstance(stmt, exp.TruncateTable):
        for table in stmt.expressions:
            yield from _refs(table, "write")
    elif isinstance(stmt, exp.Create) and kind in RELATION_KINDS:
        yield from _refs(stmt.this, "write")
    elif isinstance(stmt, exp.Alter) and kind == "TABLE":
        renames = [a for a in stmt.args.get("actions") or [] if isinstance(a, exp.AlterRename)]
        yield from _refs(stmt.this, "drop" if renames else "write")
        for rename in renames:
            yield from _refs(rename.this, "write", schema_from=stmt.this)
    elif isinstance(stmt, exp.Drop) and kind in RELATION_KINDS:
        for table in stmt.args.get("tables") or [stmt.this]:
            yield from _refs(table, "drop")


def _refs(
    node: exp.Expression | None, action: str, *, schema_from: exp.Expression | None = None
) -> Iterator[tuple[TableRef, str]]:
    if isinstance(node, exp.Schema):
        node = node.this
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        return
    db = node.args.get("db")
    if db is None and isinstance(schema_from, exp.Table):
        db = schema_from.args.get("db")
    plain = exp.Table(this=node.this.copy(), db=db.copy() if isinstance(db, exp.Identifier) else None)
    ref = TableRef(
        sql=plain.sql(dialect="postgres"),
        schema=_folded(db) if isinstance(db, exp.Identifier) else None,
        name=_folded(node.this),
    )
    yield ref, action


def _folded(ident: exp.Identifier) -> str:
    """The name as PostgreSQL stores it: unquoted identifiers fold to lower case."""
    return ident.this if ident.quoted else ident.this.lower()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
