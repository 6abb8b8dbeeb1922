"""Compose SQL from a Plan and the KB's metric definitions. Nothing about a metric is written here: tables,
expressions, aggregations and filters all come from the KB."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.kb import KnowledgeBase, Metric

from .periods import Period
from .question import Plan

AGGREGATES = {
    "sum": "sum({e})",
    "avg": "avg({e})",
    "count": "count({e})",
    "count_distinct": "count(DISTINCT {e})",
    "min": "min({e})",
    "max": "max({e})",
}


class CannotAnswer(Exception):
    """The KB has nothing that answers the question."""


@dataclass
class Context:
    """The KB plus the preferences switched on for this request; collects the KB places used."""

    kb: KnowledgeBase
    replace_filters: dict[str, str] = field(default_factory=dict)
    add_filters: dict[str, list[str]] = field(default_factory=dict)
    used: list[str] = field(default_factory=list)

    def use(self, key: str) -> None:
        if key not in self.used:
            self.used.append(key)


def quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def base_parts(ctx: Context, name: str) -> list[Metric]:
    metric = ctx.kb.metrics[name]
    ctx.use(f"metric:{name}")
    if metric.aggregation != "ratio":
        return [metric]
    return [*base_parts(ctx, metric.numerator or ""), *base_parts(ctx, metric.denominator or "")]


def metric_filters(ctx: Context, metric: Metric) -> list[str]:
    out = [ctx.replace_filters.get(" ".join(f.split()), f) for f in metric.filters]
    return out + ctx.add_filters.get(metric.table or "", [])


def source_sql(ctx: Context, metric: Metric) -> str:
    if metric.table:
        return metric.table
    ctx.use(f"snippet:{metric.snippet}")
    body = "\n".join(
        line
        for line in ctx.kb.snippets[metric.snippet or ""].splitlines()
        if not line.lstrip().startswith("--")
    ).strip()
    return "(\n    " + body.replace("\n", "\n    ") + "\n) AS src"


def aggregate(metric: Metric, extra_filters: list[str]) -> str:
    sql = AGGREGATES[metric.aggregation].format(e=metric.expression)
    return sql + (f" FILTER (WHERE {' AND '.join(extra_filters)})" if extra_filters else "")


def key_columns(ctx: Context, plan: Plan, metric: Metric) -> list[tuple[str, str]]:
    """(expression, alias) of each breakdown for a metric's source."""
    out = []
    for target in plan.breakdown:
        if target in ctx.kb.time_grains:
            out.append((ctx.kb.time_grains[target].sql.format(column=metric.time_column), target))
        else:
            if target not in metric.dimensions:
                raise CannotAnswer(f"metric {metric.name!r} cannot be broken down by {target!r}")
            column = ctx.kb.dimensions[target].column
            out.append((column, column))
    return out


def where_clauses(ctx: Context, plan: Plan, metric: Metric, period: Period) -> list[str]:
    tc = metric.time_column
    out = [f"{tc} BETWEEN DATE '{period.start.isoformat()}' AND DATE '{period.end.isoformat()}'"]
    if plan.day_filter:
        out.append(ctx.kb.day_filters[plan.day_filter].sql.format(column=tc))
    for dim, values in plan.filters.items():
        if dim not in metric.dimensions:
            raise CannotAnswer(f"metric {metric.name!r} cannot be filtered by {dim!r}")
        column = ctx.kb.dimensions[dim].column
        if len(values) == 1:
            out.append(f"{column} = {quote(values[0])}")
        else:
            out.append(f"{column} IN ({', '.join(quote(v) for v in values)})")
    return out


def metric_sql(ctx: Context, name: str, common: list[str]) -> str:
    """The select expression of a requested metric inside a query whose WHERE already holds `common`."""
    metric = ctx.kb.metrics[name]
    if metric.aggregation != "ratio":
        return aggregate(metric, [f for f in metric_filters(ctx, metric) if f not in common])
    num = metric_sql(ctx, metric.numerator or "", common)
    den = metric_sql(ctx, metric.denominator or "", common)
    return f"{num}::numeric / NULLIF({den}, 0)"


def source_key(metric: Metric) -> tuple[str, str]:
    return (metric.table or f"snippet:{metric.snippet}", metric.time_column or "")


def group_select(ctx: Context, plan: Plan, names: list[str], period: Period) -> tuple[str, list[str]]:
    """One SELECT for metrics sharing a source; returns the SQL and its key aliases."""
    parts = [p for n in names for p in base_parts(ctx, n)]
    first = parts[0]
    filter_lists = [metric_filters(ctx, p) for p in parts]
    common = [f for f in filter_lists[0] if all(f in fl for fl in filter_lists)]
    keys = key_columns(ctx, plan, first)
    select = [expr if expr == alias else f"{expr} AS {alias}" for expr, alias in keys]
    select += [f"{metric_sql(ctx, n, common)} AS {n}" for n in names]
    lines = ["SELECT " + ",\n       ".join(select), f"FROM {source_sql(ctx, first)}"]
    lines.append("WHERE " + "\n  AND ".join(where_clauses(ctx, plan, first, period) + common))
    if keys:
        lines.append("GROUP BY " + ", ".join(str(i + 1) for i in range(len(keys))))
    return "\n".join(lines), [alias for _, alias in keys]


def period_query(ctx: Context, plan: Plan, period: Period) -> tuple[str, list[str]]:
    """The unordered answer for one period: one SELECT, or one CTE per source joined on the keys."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in plan.metrics:
        groups.setdefault(source_key(base_parts(ctx, name)[0]), []).append(name)
    for names in groups.values():
        keys = {source_key(p) for n in names for p in base_parts(ctx, n)}
        if len(keys) > 1:
            raise CannotAnswer(f"the parts of {names} come from different tables")
    selects = [group_select(ctx, plan, names, period) for names in groups.values()]
    if len(selects) == 1:
        return selects[0]
    keys = selects[0][1]
    ctes = ",\n".join(f"g{i + 1} AS ({_indent(sql)})" for i, (sql, _) in enumerate(selects))
    join = " JOIN ".join(
        f"g{i + 1}" + (f" USING ({', '.join(keys)})" if keys and i else "") for i in range(len(selects))
    )
    if not keys:
        join = " CROSS JOIN ".join(f"g{i + 1}" for i in range(len(selects)))
    cols = keys + [f"g{i + 1}.{n}" for i, names in enumerate(groups.values()) for n in names]
    return f"WITH {ctes}\nSELECT {', '.join(cols)}\nFROM {join}", keys


def order_clause(plan: Plan, keys: list[str], metric_alias: str) -> str:
    if plan.order_desc is not None:
        sql = f"\nORDER BY {metric_alias} {'DESC' if plan.order_desc else 'ASC'}"
        return sql + (f"\nLIMIT {plan.limit}" if plan.limit else "")
    return f"\nORDER BY {', '.join(keys)}" if keys else ""


def compose(ctx: Context, plan: Plan) -> str:
    if not plan.metrics:
        raise CannotAnswer("no metric of the knowledge base is named in the question")
    if plan.period is None:
        raise CannotAnswer("no time period is named in the question")
    current, keys = period_query(ctx, plan, plan.period)
    if plan.compare_to is None:
        return current + order_clause(plan, keys, plan.metrics[0])
    if len(plan.metrics) != 1:
        raise CannotAnswer("period comparisons are answered for one metric at a time")
    previous, _ = period_query(ctx, plan, plan.compare_to)
    m = plan.metrics[0]
    join = (
        f"JOIN ({_indent(previous)}) AS prev USING ({', '.join(keys)})"
        if keys
        else f"CROSS JOIN ({_indent(previous)}) AS prev"
    )
    sql = (
        f"SELECT {''.join(k + ', ' for k in keys)}cur.{m} AS current_value, prev.{m} AS previous_value,\n"
        f"       (cur.{m} - prev.{m})::numeric / NULLIF(prev.{m}, 0) AS change\n"
        f"FROM ({_indent(current)}) AS cur\n{join}"
    )
    return sql + order_clause(plan, keys, "change")


def _indent(sql: str) -> str:
    return "\n    " + re.sub(r"\n", "\n    ", sql) + "\n"
