"""Which output columns identify a row of the gold, read from its SQL: the GROUP BY columns and the ORDER BY key.

Used only to explain a failed comparison (which gold row a prediction row stands for), never to decide it, so a
guess that is wrong costs a worse message, not a wrong verdict; the first-difference search checks every key
against the rows before using it. Found by parsing (sqlglot), as order.py finds the ORDER BY.
"""

from __future__ import annotations

from sqlglot import exp

from bot.scoring.order import _parse, _resolve_key, _top_select, key_positions, order_info


def _group_nodes(tree: exp.Expression | None) -> list[exp.Expression] | None:
    """The plain GROUP BY expressions of the top-level SELECT; None for ROLLUP, CUBE and GROUPING SETS (their
    rows repeat key values with NULLs in other places) and for set operations (a UNION's rows are not grouped
    once)."""
    if not isinstance(tree, exp.Select):
        return None
    group = tree.args.get("group")
    if not isinstance(group, exp.Group) or not group.expressions:
        return None
    if any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return None
    nodes = list(group.expressions)
    if any(isinstance(n, exp.Rollup | exp.Cube | exp.GroupingSets) for n in nodes):
        return None
    return nodes


def group_positions(sql: str, columns: tuple[str, ...]) -> tuple[int, ...] | None:
    """Output positions of the gold's GROUP BY expressions that are returned (ordinal, output name or the same
    expression), in column order; None without a usable GROUP BY or when none of it is returned."""
    tree = _parse(sql)
    nodes = _group_nodes(tree)
    if nodes is None:
        return None
    select = _top_select(tree)
    found = {_resolve_key(node, select, tuple(columns)) for node in nodes}
    positions = tuple(sorted(p for p in found if p is not None))
    return positions or None


def alignment_keys(sql: str, columns: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """Candidate row keys from the gold's SQL, most telling first: the GROUP BY columns, then the ORDER BY key.

    A key spanning every column says nothing an exact row comparison does not, so it is left out. Any failure
    of the analysis means "no key": a message helper must never break a verdict."""
    try:
        return _alignment_keys(sql, tuple(columns))
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds
        return ()


def _alignment_keys(sql: str, columns: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    out: list[tuple[int, ...]] = []
    grouped = group_positions(sql, columns)
    if grouped:
        out.append(grouped)
    info = order_info(sql)
    if info.ordered:
        ordered = key_positions(sql, info, tuple(columns))
        if ordered:
            out.append(tuple(sorted(set(ordered))))
    width = len(columns)
    unique: list[tuple[int, ...]] = []
    for key in out:
        if key not in unique and len(key) < width:
            unique.append(key)
    return tuple(unique)
