"""The values a perturbed copy writes at a target (issue 18): `boundary_values` turns a target's constant into
"= c, c - ε, c + ε", and the edges of the periods around a date. Every output is an SQL expression rendered by
sqlglot from a validated literal (or a bare column) and fixed templates: safe to embed in UPDATE/INSERT."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal

import sqlglot
from sqlglot import exp

from bot.scoring.perturb_sql import DIALECT, is_safe_literal, parse_gold, render

_INTEGER_TYPES = ("smallint", "integer", "bigint", "int", "int2", "int4", "int8", "serial", "bigserial")
_DECIMAL_TYPES = ("numeric", "decimal", "real", "double precision", "float", "float4", "float8", "money")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?")
_ONE_SECOND = dt.timedelta(seconds=1)
_ONE_DAY = dt.timedelta(days=1)
_STEP = Decimal("0.01")
_TIMESTAMP_TYPES = (exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIMESTAMPLTZ, exp.DType.DATETIME)

# The edges of the periods around `__x` (a column or a constant): "period" outputs these, in this order.
PERIOD_EDGES = (
    "DATE_TRUNC('month', CAST(__x AS TIMESTAMP))",  # the month's start
    "DATE_TRUNC('month', CAST(__x AS TIMESTAMP)) + INTERVAL '1 month' - INTERVAL '1 microsecond'",  # its end
    "DATE_TRUNC('year', CAST(__x AS TIMESTAMP))",  # the year's start
    "DATE_TRUNC('year', CAST(__x AS TIMESTAMP)) + INTERVAL '1 year' - INTERVAL '1 microsecond'",  # its end
    "DATE_TRUNC('day', CAST(__x AS TIMESTAMP)) AT TIME ZONE 'UTC'",  # the day's midnight in UTC (a timestamptz)
)


def boundary_values(value: str, kind_hint: str | None = None) -> tuple[str, ...]:
    """Safe SQL expressions around a target's constant `value` (a `Target.value`), the first always `c` itself.

    `kind_hint` is the column's PostgreSQL type (`information_schema.columns.data_type`; None: read the literal)
    or "period". Produced, in this order:
    - integers (an integer literal, or any number on an integer column): `c, c - 1, c + 1`; a fractional `c` on
      an integer column gives `floor(c), ceil(c)`;
    - other numbers (a decimal literal, or a decimal/float column): `c, c - 0.01, c + 0.01`, exact decimals;
    - dates ('YYYY-MM-DD', a date column, or a cast to DATE): `c, c - 1 day, c + 1 day`;
    - timestamps (an ISO timestamp, a timestamp column, or a cast to a timestamp): `c, c - 1 second, c + 1
      second` (a date on a timestamp column is its midnight);
    - strings, booleans and anything else: `c` only.
    A plain string stays a plain string (PostgreSQL types it by the column); a cast keeps its type.
    "period": `value` is a literal date/timestamp or a bare column; the result is `PERIOD_EDGES` with `__x`
    replaced by it: month start, month end minus 1 microsecond, year start, year end minus 1 microsecond, and
    the day's midnight UTC. A number or another string gives () (`EXTRACT(MONTH ...) = 3` has no date).
    A `value` that is not one literal (or column, for "period") gives ().
    """
    node = parse_gold(value)
    hint = re.sub(r"\(.*", "", (kind_hint or "").strip().lower()).strip()  # numeric(10,2) is numeric
    if node is None:
        return ()
    node = node.unnest()
    if hint == "period":
        return _period(node)
    if not is_safe_literal(node):
        return ()
    cast = node.args["to"] if isinstance(node, exp.Cast) else None
    literal = node.this if isinstance(node, exp.Cast) else node
    if isinstance(literal, exp.Literal | exp.Neg) and not _is_string(literal):
        return _numbers(_number(literal), hint, cast)
    if not _is_string(literal) or _text_hint(hint, cast):
        return (render(node),)
    text = literal.name.strip()
    to_time = hint.startswith("timestamp") or (cast is not None and cast.is_type(*_TIMESTAMP_TYPES))
    if hint != "date" and (_TIMESTAMP.fullmatch(text) or (to_time and _DATE.fullmatch(text))):
        return _shifted(text, _ONE_SECOND, cast, render(node))
    if (_DATE.fullmatch(text) or _TIMESTAMP.fullmatch(text)) and hint in ("", "date"):
        return _shifted(text, _ONE_DAY, cast, render(node))
    return (render(node),)


def _is_string(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _text_hint(hint: str, cast: exp.DataType | None) -> bool:
    if cast is not None:
        return cast.is_type(*exp.DataType.TEXT_TYPES)
    return hint in ("text", "character varying", "varchar", "character", "char", "bpchar", "name", "citext")


def _number(node: exp.Expr) -> Decimal:
    sign = -1 if isinstance(node, exp.Neg) else 1
    return sign * Decimal(node.this.name if isinstance(node, exp.Neg) else node.name)


def _numbers(c: Decimal, hint: str, cast: exp.DataType | None) -> tuple[str, ...]:
    integral = c == c.to_integral_value()
    if hint in _INTEGER_TYPES or (hint not in _DECIMAL_TYPES and integral and "." not in str(c)):
        if not integral:
            low, high = math.floor(c), math.ceil(c)
            return tuple(_render_number(Decimal(v), cast) for v in (low, high))
        values = [c, c - 1, c + 1]
    else:
        values = [c, c - _STEP, c + _STEP]
    return tuple(dict.fromkeys(_render_number(v, cast) for v in values))


def _render_number(value: Decimal, cast: exp.DataType | None) -> str:
    text = format(value, "f")
    literal: exp.Expr = exp.Literal.number(text.lstrip("-"))
    if text.startswith("-"):
        literal = exp.Neg(this=literal)
    return render(exp.Cast(this=literal, to=cast.copy()) if cast is not None else literal)


def _shifted(text: str, step: dt.timedelta, cast: exp.DataType | None, same: str) -> tuple[str, ...]:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return (same,)
    if step == _ONE_DAY:
        days = (moment.date() - step, moment.date() + step)
        texts = [d.isoformat() for d in days]
    else:
        texts = [(moment + delta).isoformat(sep=" ") for delta in (-step, step)]
    literals = [exp.Literal.string(t) for t in texts]
    shifted = [render(exp.Cast(this=lit, to=cast.copy()) if cast is not None else lit) for lit in literals]
    return (same, *shifted)


def _period(node: exp.Expr) -> tuple[str, ...]:
    if isinstance(node, exp.Column):
        ok = not node.table and isinstance(node.this, exp.Identifier)
    else:
        ok = is_safe_literal(node) and _temporal_literal(node)
    if not ok:
        return ()
    edges = []
    for template in PERIOD_EDGES:
        tree = sqlglot.parse_one(template, read=DIALECT)
        for column in list(tree.find_all(exp.Column)):
            column.replace(node.copy())
        edges.append(render(tree))
    return tuple(edges)


def _temporal_literal(node: exp.Expr) -> bool:
    if isinstance(node, exp.Cast) and node.args["to"].is_type(*exp.DataType.TEMPORAL_TYPES):
        return True
    text = node.name.strip() if _is_string(node) else ""
    return bool(_TIMESTAMP.fullmatch(text) or _DATE.fullmatch(text))
