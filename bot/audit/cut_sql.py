"""The sqlglot rewrites the `order_ties` detector runs: what a gold's top-level query cuts (LIMIT, OFFSET, FETCH
FIRST, DISTINCT ON) and the probes that show the rows around the cut with their sort keys. Pure: no database."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from bot.cases.sqlparse import parsed
from bot.scoring.order import KEY_PREFIX, _key_value

DISTINCT_PREFIX = "__sqlcanary_d"
LOOK_PAST = 50  # rows read past the cut: a tie group crossing it shows there


@dataclass(frozen=True)
class Cut:
    """The window a gold's top-level query returns: rows [offset, offset + limit) of its ordered rows."""

    limit: int
    offset: int = 0
    ordered: bool = True  # False: LIMIT with no ORDER BY at all


@dataclass(frozen=True)
class Probe:
    """A rewrite of the gold: `sql` returns the rows the cut chooses from, in the gold's order, with the sort keys
    (and DISTINCT ON expressions) appended after the gold's `n_out` output columns."""

    sql: str
    n_out: int
    n_keys: int
    n_distinct: int = 0


def top_query(sql: str) -> exp.Expr | None:
    try:
        trees = parsed(sql)
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds; unparsable means nothing to rewrite
        return None
    if len(trees) != 1 or trees[0] is None:
        return None
    tree = trees[0]
    while isinstance(tree, exp.Subquery | exp.Paren) and not any(
        tree.args.get(k) for k in ("order", "limit")
    ):
        tree = tree.this
    return tree


def _int(node: exp.Expression | None) -> int | None:
    if node is None:
        return None
    value = node.args.get("count") if isinstance(node, exp.Fetch) else node.args.get("expression")
    if value is None and isinstance(node, exp.Offset | exp.Limit):
        value = node.this
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def the_cut(sql: str) -> Cut | None:
    """The gold's LIMIT (or FETCH FIRST) and OFFSET, when both are integer literals; None without a limit."""
    tree = top_query(sql)
    if not isinstance(tree, exp.Select | exp.SetOperation):
        return None
    limit = _int(tree.args.get("limit"))
    if limit is None:
        return None
    offset = _int(tree.args.get("offset")) or 0
    return Cut(limit=limit, offset=offset, ordered=bool(tree.args.get("order")))


def _outputs(select: exp.Select) -> int | None:
    """How many columns the select list returns; None when a star hides it."""
    if any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star) for e in select.expressions):
        return None
    return len(select.expressions)


def widened(sql: str, cut: Cut) -> str | None:
    """The gold reading from its first row to LOOK_PAST rows past its cut (no OFFSET): the rows on both sides of
    each boundary of the window."""
    tree = top_query(sql)
    if not isinstance(tree, exp.Select | exp.SetOperation):
        return None
    probe = tree.copy()
    probe.set("offset", None)
    probe.set("limit", None)
    return probe.limit(cut.offset + cut.limit + LOOK_PAST, copy=False).sql(dialect="postgres")


def keyed_probe(sql: str, cut: Cut) -> Probe | None:
    """`widened` with the ORDER BY keys appended as outputs (`__sqlcanary_k0`, ...): a tie is equal keys, whatever
    the output columns show. None for shapes where appending changes the rows (DISTINCT, set operations, a star)."""
    tree = top_query(sql)
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or not tree.args.get("order"):
        return None
    n_out = _outputs(tree)
    if n_out is None:
        return None
    keys = [_key_value(o.this, tree) for o in tree.args["order"].expressions]
    if any(k is None for k in keys):
        return None
    probe = tree.copy()
    probe.select(*[exp.alias_(k, f"{KEY_PREFIX}{i}") for i, k in enumerate(keys) if k], copy=False)
    text = widened(probe.sql(dialect="postgres"), cut)
    return Probe(sql=text, n_out=n_out, n_keys=len(keys)) if text else None


def distinct_on_probe(sql: str) -> Probe | None:
    """A gold with DISTINCT ON: the rows it picks from, DISTINCT ON and LIMIT/OFFSET removed, in its order, with
    the DISTINCT ON expressions and the ORDER BY keys appended. None when the gold has no DISTINCT ON."""
    tree = top_query(sql)
    if not isinstance(tree, exp.Select):
        return None
    distinct = tree.args.get("distinct")
    on = distinct.args.get("on") if isinstance(distinct, exp.Distinct) else None
    if on is None:
        return None
    n_out = _outputs(tree)
    if n_out is None:
        return None
    on_exprs = list(on.expressions) if isinstance(on, exp.Tuple) else [on]
    order = tree.args.get("order")
    keys = [_key_value(o.this, tree) for o in order.expressions] if order else []
    ons = [_key_value(e, tree) for e in on_exprs]
    if any(k is None for k in keys) or any(d is None for d in ons):
        return None
    probe = tree.copy()
    probe.set("distinct", None)
    probe.set("limit", None)
    probe.set("offset", None)
    extra = [exp.alias_(d, f"{DISTINCT_PREFIX}{i}") for i, d in enumerate(ons) if d]
    extra += [exp.alias_(k, f"{KEY_PREFIX}{i}") for i, k in enumerate(keys) if k]
    probe.select(*extra, copy=False)
    return Probe(sql=probe.sql(dialect="postgres"), n_out=n_out, n_keys=len(keys), n_distinct=len(ons))
