"""The safe side of perturbation (issue 18): parse an untrusted gold, and the allowlist that decides which of its
pieces may be rendered into the UPDATE/INSERT statements that build perturbed copies. Every text that leaves
this module is rendered by sqlglot from an AST that passed the allowlist, never copied from the gold's source."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

DIALECT = "postgres"

_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_FIELD = re.compile(r"[A-Za-z_]{1,20}")
_TEMPORAL = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?"
)

# Pure functions a `where` conjunct may call (sqlglot's node types for them, as the postgres reader builds them).
_PURE_FUNCTIONS: tuple[type[exp.Expr], ...] = (
    exp.Lower,
    exp.Upper,
    exp.Trim,
    exp.Length,
    exp.Abs,
    exp.Round,
    exp.Coalesce,
    exp.DateTrunc,
    exp.TimestampTrunc,
    exp.Extract,
    exp.Substring,
)
_OPERATORS: tuple[type[exp.Expr], ...] = (
    exp.Paren,
    exp.Neg,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.EQ,
    exp.NEQ,
    exp.LT,
    exp.LTE,
    exp.GT,
    exp.GTE,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Is,
    exp.Between,
    exp.Like,
    exp.ILike,
)
_LEAVES: tuple[type[exp.Expr], ...] = (exp.Literal, exp.Boolean, exp.Null)
_BAD_TYPES = {exp.DType.USERDEFINED, exp.DType.UNKNOWN}


def parse_statement(sql: str) -> exp.Expr | None:
    """The one statement of `sql` read as PostgreSQL; None when it does not parse or holds more or fewer than
    one statement."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except (SqlglotError, RecursionError, ValueError):
        return None
    return statements[0] if len(statements) == 1 else None


def parse_gold(sql: str) -> exp.Expr | None:
    """`parse_statement` with unquoted identifiers folded to lower case, as the server does, and dollar-quoted
    strings ($$it's$$) as ordinary string literals (rendered 'it''s')."""
    tree = parse_statement(sql)
    if tree is None:
        return None
    for raw in list(tree.find_all(exp.RawString)):
        raw.replace(exp.Literal.string(raw.name))
    return normalize_identifiers(tree, dialect=DIALECT)


def render(node: exp.Expr) -> str:
    return node.sql(dialect=DIALECT)


def ident(node: exp.Identifier | str) -> str:
    """An identifier as SQL: a quoted one keeps its quotes (escaped by sqlglot), an unquoted one as folded."""
    identifier = node if isinstance(node, exp.Identifier) else exp.to_identifier(node)
    return render(identifier)


def table_text(table: exp.Table) -> str | None:
    """`schema.name` as the gold wrote it, without its alias; None for a function in FROM (generate_series)."""
    if not isinstance(table.this, exp.Identifier):
        return None
    parts = [table.args.get(key) for key in ("catalog", "db", "this")]
    names = [p for p in parts if isinstance(p, exp.Identifier)]
    if len(names) != sum(p is not None for p in parts):
        return None
    return ".".join(ident(p) for p in names)


def _safe_type(node: exp.Expr) -> bool:
    """A built-in type, with numeric parameters at most (`NUMERIC(10, 2)`)."""
    if not isinstance(node, exp.DataType) or node.this in _BAD_TYPES:
        return False
    return all(
        isinstance(p, exp.DataTypeParam)
        and isinstance(p.this, exp.Literal)
        and _NUMBER.fullmatch(p.this.name)
        for p in node.expressions
    )


def is_safe_literal(node: exp.Expr) -> bool:
    """A number, a string, TRUE/FALSE, a negative number, or one of these cast to a built-in type
    (`DATE '2023-01-01'` reads as a cast)."""
    if isinstance(node, exp.Paren):
        return is_safe_literal(node.this)
    if isinstance(node, exp.Neg):
        inner = node.this
        return isinstance(inner, exp.Literal) and not inner.is_string and bool(_NUMBER.fullmatch(inner.name))
    if isinstance(node, exp.Cast):
        return (
            _safe_type(node.args["to"]) and is_safe_literal(node.this) and not isinstance(node.this, exp.Cast)
        )
    if isinstance(node, exp.Literal):
        return node.is_string or bool(_NUMBER.fullmatch(node.name))
    return isinstance(node, exp.Boolean)


def safe_literal(node: exp.Expr) -> str | None:
    """The literal rendered by sqlglot, or None when `node` is anything else."""
    if not is_safe_literal(node):
        return None
    return render(node.this if isinstance(node, exp.Paren) else node)


def looks_temporal(node: exp.Expr) -> bool:
    """A date or timestamp constant: an ISO-looking string, a cast to a date/time type, CURRENT_DATE, NOW(),
    an INTERVAL, or arithmetic over them."""
    for part in node.walk():
        if isinstance(part, exp.Literal) and part.is_string and _TEMPORAL.fullmatch(part.name.strip()):
            return True
        if isinstance(part, exp.Cast) and part.args["to"].is_type(*exp.DataType.TEMPORAL_TYPES):
            return True
        if isinstance(part, exp.CurrentDate | exp.CurrentTimestamp | exp.CurrentDatetime | exp.Interval):
            return True
    return False


def is_safe_condition(node: exp.Expr) -> bool:
    """Only columns, literals, casts to built-in types, arithmetic/comparison/boolean operators, IS [NOT] NULL,
    IN (literals), BETWEEN, [I]LIKE and the pure functions above: no subquery, no other function, no star."""
    for part in node.walk():
        if isinstance(part, exp.Column):
            if not isinstance(part.this, exp.Identifier):
                return False
        elif isinstance(part, exp.Identifier):
            if not isinstance(part.parent, exp.Column):
                return False
        elif isinstance(part, exp.In):
            if part.args.get("query") or part.args.get("unnest") or part.args.get("field"):
                return False
            if not all(is_safe_literal(e) for e in part.expressions):
                return False
        elif isinstance(part, exp.Cast):
            if not _safe_type(part.args["to"]):
                return False
        elif isinstance(part, exp.DataType):
            if not _safe_type(part):
                return False
        elif isinstance(part, exp.DataTypeParam):
            continue  # its type was checked above
        elif isinstance(part, exp.Var):  # a field name: EXTRACT(YEAR FROM d), DATE_TRUNC('month', d)
            parent_ok = isinstance(part.parent, exp.Extract | exp.DateTrunc | exp.TimestampTrunc)
            if not (parent_ok and _FIELD.fullmatch(part.name)):
                return False
        elif isinstance(part, exp.Literal):
            if not (part.is_string or _NUMBER.fullmatch(part.name)):
                return False
        elif not isinstance(part, _LEAVES + _OPERATORS + _PURE_FUNCTIONS):
            return False
    return any(isinstance(part, exp.Column) for part in node.walk())


def unqualified(node: exp.Expr) -> exp.Expr:
    """A copy of `node` whose columns name no table (the condition is over one table)."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        for key in ("table", "db", "catalog"):
            column.set(key, None)
    return copy


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The top-level AND conjuncts of a condition (through parentheses around an AND)."""
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]
