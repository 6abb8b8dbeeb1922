"""The comparable parts of a normalised statement, as SQL text, for the `structural` scorer: tables, joins,
filters, aggregates, grouping, having, select list, distinct, ordering, limit, set operations, CTEs and derived
tables (the last three named, so that a single differing one can be compared recursively)."""

from __future__ import annotations

from sqlglot import exp

from bot.scoring.normalize import DIALECT, from_clause, iter_own_nodes
from bot.scoring.structural_diff import Part


def statement_parts(statements: list[exp.Expr], *, single: bool) -> dict[str, Part]:
    if single:
        return extract_parts(statements[0])
    return {
        "statements": Part(
            tuple(_sql(s) for s in statements),
            ordered=True,
            named=tuple((f"statement {i}", s) for i, s in enumerate(statements, 1)),
        ),
        "tables": Part(tuple(sorted({t for s in statements for t in _tables(s)}))),
    }


def extract_parts(statement: exp.Expr) -> dict[str, Part]:
    """The comparable parts of one normalised statement (empty parts are left out)."""
    if isinstance(statement, exp.SetOperation):
        parts = _set_operation_parts(statement)
    elif isinstance(statement, exp.Select):
        parts = _select_parts(statement)
    else:
        parts = _other_parts(statement)
    parts["tables"] = Part(tuple(sorted(set(_tables(statement)))))  # a table read twice is one source
    parts["ctes"] = _ctes(statement)
    return {name: part for name, part in parts.items() if part.items}


def _select_parts(select: exp.Select) -> dict[str, Part]:
    frm = from_clause(select)
    sources = [frm.this] if frm else []
    sources += [j.this for j in select.args.get("joins") or []]
    derived = [s for s in sources if isinstance(s, exp.Subquery)]
    having = select.args.get("having")
    group = select.args.get("group")
    distinct = select.args.get("distinct")
    return {
        "joins": Part(tuple(_join_item(j) for j in select.args.get("joins") or [])),
        "filters": Part(_conjuncts(select.args.get("where"))),
        "aggregates": Part(tuple(_aggregates(select))),
        "grouping": Part(tuple(_sql(g) for g in group.expressions) if group else ()),
        "having": Part(_conjuncts(having)),
        "select": Part(tuple(_sql(e.unalias()) for e in select.expressions), ordered=True),
        "distinct": Part((_sql(distinct),) if distinct else ()),
        "ordering": _ordering(select),
        "limit": Part(_limit(select)),
        "subqueries": Part(tuple(_sql(s) for s in derived), named=tuple((s.alias, s.this) for s in derived)),
        "sources": Part(tuple(s.alias_or_name for s in sources)),  # not compared: ranks the differences
    }


def _set_operation_parts(statement: exp.SetOperation) -> dict[str, Part]:
    operations: list[str] = []
    branches: list[exp.Expr] = []

    def flatten(node: exp.Expr) -> None:
        modifiers = any(node.args.get(k) for k in ("order", "limit", "offset", "with_", "with"))
        if isinstance(node, exp.SetOperation) and (node is statement or not modifiers):
            flatten(node.this)
            operations.append(node.key.upper() + ("" if node.args.get("distinct") else " ALL"))
            flatten(node.expression)
        else:
            branches.append(node.unnest() if isinstance(node, exp.Subquery) else node)

    flatten(statement)
    ordered = any(op.startswith("EXCEPT") for op in operations)
    return {
        "set_operations": Part(tuple(operations), ordered=True),
        "branches": Part(
            tuple(_sql(b) for b in branches),
            ordered=ordered,
            named=tuple((f"branch {i}", b) for i, b in enumerate(branches, 1)),
        ),
        "ordering": _ordering(statement),
        "limit": Part(_limit(statement)),
    }


def _other_parts(statement: exp.Expr) -> dict[str, Part]:
    query = statement.args.get("expression")
    if isinstance(statement, exp.Create | exp.Insert) and isinstance(query, exp.Query):
        head = statement.copy()
        head.set("expression", None)  # CREATE VIEW v AS SELECT ...: `CREATE VIEW v`, then the query's parts
        return extract_parts(query) | {"statement": Part((_sql(head),))}
    where = statement.args.get("where")
    return {
        "statement": Part((statement.key.upper(),)),
        "filters": Part(_conjuncts(where) if isinstance(where, exp.Where) else ()),
        "body": Part((_sql(statement),)),
    }


def _tables(statement: exp.Expr) -> list[str]:
    ctes = {cte.alias for cte in statement.find_all(exp.CTE)}
    names = []
    for table in statement.find_all(exp.Table):
        if table.name and not table.args.get("db") and table.name in ctes:
            continue
        names.append(".".join(p.name for p in table.parts) if table.name else _sql(table.this))
    return names


def _ctes(statement: exp.Expr) -> Part:
    with_ = statement.args.get("with_") or statement.args.get("with")
    if not isinstance(with_, exp.With):
        return Part(())
    prefix = "RECURSIVE " if with_.args.get("recursive") else ""
    ctes = list(with_.expressions)
    return Part(
        tuple(f"{prefix}{c.alias} AS ({_sql(c.this)})" for c in ctes),
        named=tuple((c.alias, c.this) for c in ctes),
    )


def _join_item(join: exp.Join) -> str:
    source = join.this
    name = source.alias_or_name if isinstance(source, exp.Table | exp.Subquery) else _sql(source)
    on, using = join.args.get("on"), join.args.get("using")
    condition = (
        f" ON {_sql(on)}" if on else (f" USING ({', '.join(_sql(u) for u in using)})" if using else "")
    )
    method = f"{join.method} " if join.method else ""
    if join.side:  # outer joins are not commutative: the joined source is part of the item
        return f"{method}{join.side} JOIN {name}{condition}"
    if not isinstance(source, exp.Table | exp.Subquery):
        return f"{method}JOIN {name}{condition}"
    if join.kind == "CROSS" or not (condition or method):
        return "CROSS JOIN"
    return f"{method}INNER JOIN{condition}"  # inner joins commute: the tables part names the sources


def _conjuncts(clause: exp.Expr | None) -> tuple[str, ...]:
    if clause is None or clause.this is None:
        return ()
    condition = clause.this
    return tuple(_sql(c) for c in (condition.flatten() if isinstance(condition, exp.And) else [condition]))


def _aggregates(select: exp.Select) -> list[str]:
    found = []
    for node in iter_own_nodes(select):
        if isinstance(node, exp.AggFunc):
            outer = node.parent if isinstance(node.parent, exp.Filter | exp.Window) else node
            found.append(_sql(outer))
    return found


def _ordering(query: exp.Expr) -> Part:
    order = query.args.get("order")
    items = []
    for key in order.expressions if order else []:
        desc = bool(key.args.get("desc"))
        text = f"{_sql(key.this)} {'DESC' if desc else 'ASC'}"
        if bool(key.args.get("nulls_first")) != desc:  # PostgreSQL: NULLS LAST for ASC, NULLS FIRST for DESC
            text += " NULLS FIRST" if key.args.get("nulls_first") else " NULLS LAST"
        items.append(text)
    return Part(tuple(items), ordered=True)


def _limit(query: exp.Expr) -> tuple[str, ...]:
    items = []
    limit = query.args.get("limit")
    if isinstance(limit, exp.Limit | exp.Fetch):  # FETCH FIRST n ROWS ONLY is LIMIT n (n defaults to 1)
        count = limit.expression if isinstance(limit, exp.Limit) else limit.args.get("count")
        items.append(f"LIMIT {_sql(count) if count is not None else '1'}")
    offset = query.args.get("offset")
    if isinstance(offset, exp.Offset):
        items.append(f"OFFSET {_sql(offset.expression)}")
    return tuple(items)


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect=DIALECT)
