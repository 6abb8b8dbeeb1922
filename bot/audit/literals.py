"""String literals a gold compares with a table column in a WHERE (`=`, `IN`, `LIKE` without wildcards), each
resolved to the one table column it reads, and the stored values nearest a literal. Pure: the schema is given."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from bot.cases.sqlparse import parsed

# (schema, table) -> {column: data_type}, names as PostgreSQL stores them
Schema = Mapping[tuple[str, str], Mapping[str, str]]
TEXT_TYPES = frozenset({"text", "character varying", "character", "name"})
WRAPPERS: dict[type[exp.Expr], str] = {exp.Lower: "lower", exp.Upper: "upper", exp.Trim: "btrim"}
DEFAULT_SCHEMA = "public"  # a session's search_path (bot/db/session.py)


@dataclass(frozen=True)
class Comparison:
    """`wrapper(schema.table.column) op 'literal'` in a gold's WHERE."""

    schema: str
    table: str
    column: str
    literal: str
    op: str  # "=", "IN" or "LIKE"
    wrapper: str | None = None  # lower, upper or btrim around the column

    @property
    def column_name(self) -> str:
        return (
            f"{self.table}.{self.column}"
            if self.schema == DEFAULT_SCHEMA
            else f"{self.schema}.{self.table}.{self.column}"
        )

    def _target(self) -> exp.Expression:
        return exp.column(self.column, table=self.table, db=self.schema, quoted=True)

    def _source(self) -> exp.Expression:
        return exp.table_(self.table, db=self.schema, quoted=True)

    def exists_sql(self) -> str:
        """One row when a stored value satisfies the comparison (the server's own `=`: padding, collation)."""
        target: exp.Expression = self._target()
        if self.wrapper:
            target = exp.Anonymous(this=self.wrapper, expressions=[target])
        where = exp.EQ(this=target, expression=exp.Literal.string(self.literal))
        return exp.select("1").from_(self._source()).where(where).limit(1).sql(dialect="postgres")

    def values_sql(self, limit: int) -> str:
        """The column's distinct stored values (at most `limit`)."""
        col = self._target()
        return (
            exp.select(col)
            .distinct()
            .from_(self._source())
            .where(exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null())))
            .limit(limit)
            .sql(dialect="postgres")
        )


def _ident(node: exp.Identifier | exp.Expression | None) -> str:
    if isinstance(node, exp.Identifier):
        return str(node.this) if node.quoted else node.name.lower()
    return node.name.lower() if node is not None else ""


def _string(node: exp.Expression) -> str | None:
    return str(node.this) if isinstance(node, exp.Literal) and node.is_string else None


def _column_side(node: exp.Expr) -> tuple[exp.Column, str | None] | None:
    wrapper = WRAPPERS.get(type(node))
    if wrapper is not None and not node.args.get("expression") and isinstance(node.this, exp.Column):
        return node.this, wrapper
    return (node, None) if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) else None


def _pairs(where: exp.Expr) -> Iterable[tuple[exp.Expr, exp.Expr, str, str]]:
    """(comparison node, column side, literal, op) of each comparison in a WHERE."""
    for node in where.find_all(exp.EQ, exp.In, exp.Like):
        if isinstance(node, exp.EQ):
            for col, lit in ((node.this, node.expression), (node.expression, node.this)):
                text = _string(lit)
                if text is not None:
                    yield node, col, text, "="
        elif isinstance(node, exp.In):
            if node.args.get("query") is None:
                for lit in node.expressions:
                    text = _string(lit)
                    if text is not None:
                        yield node, node.this, text, "IN"
        else:
            text = _string(node.expression)
            if text is not None and "%" not in text and "_" not in text and not node.args.get("escape"):
                yield node, node.this, text, "LIKE"


def _resolve(column: exp.Column, sources: Mapping[str, object], schema: Schema) -> tuple[str, str] | None:
    """The (schema, table) a column reads, when exactly one table of its own query has it."""
    name = _ident(column.this)
    tables: dict[str, tuple[str, str]] = {}
    opaque = False
    for alias, source in sources.items():
        if isinstance(source, exp.Table):
            tables[alias.lower()] = (_ident(source.args.get("db")) or DEFAULT_SCHEMA, _ident(source.this))
        else:
            opaque = True  # a CTE or a subquery: what it returns is not a stored column
    if column.table:
        found = tables.get(column.table.lower())
        return found if found and name in schema.get(found, {}) else None
    if opaque:
        return None
    having = [t for t in dict.fromkeys(tables.values()) if name in schema.get(t, {})]
    return having[0] if len(having) == 1 else None


def literal_comparisons(sql: str, schema: Schema) -> list[Comparison]:
    """Every string literal compared with a text column of one table in a WHERE of the gold (each query level
    on its own); literals whose column cannot be resolved to one table column are left out."""
    try:
        trees = parsed(sql)
        scopes = traverse_scope(trees[0].copy()) if len(trees) == 1 and trees[0] is not None else []
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds; nothing resolvable then
        return []
    found: dict[Comparison, None] = {}
    for scope in scopes:
        where = scope.expression.args.get("where") if isinstance(scope.expression, exp.Select) else None
        if where is None:
            continue
        for node, side, literal, op in _pairs(where):
            if node.find_ancestor(exp.Select) is not scope.expression:
                continue  # a subquery's own scope reads it
            col = _column_side(side)
            if col is None:
                continue
            table = _resolve(col[0], scope.sources, schema)
            if table is None:
                continue
            name = _ident(col[0].this)
            if schema[table].get(name) not in TEXT_TYPES:
                continue
            found[Comparison(table[0], table[1], name, literal, op, col[1])] = None
    return list(found)


def nearest_values(literal: str, values: Iterable[str], n: int = 5) -> list[str]:
    """The `n` stored values most like `literal` (case and surrounding spaces ignored), best first."""
    want = literal.strip().lower()
    scored = sorted(
        ((difflib.SequenceMatcher(None, want, v.strip().lower()).ratio(), v) for v in values),
        key=lambda p: -p[0],
    )
    return [v for _, v in scored[:n]]


def likeness(literal: str, value: str) -> float:
    """0..1: how close a stored value is to the literal (1: the same but for case and surrounding spaces)."""
    a, b = literal.strip().lower(), value.strip().lower()
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio()
