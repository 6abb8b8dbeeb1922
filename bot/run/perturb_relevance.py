"""Which of a perturbed copy's changes can have separated a prediction from the gold: those to what the queries
read. A coincidental verdict names them first (bot.run.perturbed)."""

from __future__ import annotations

import sqlglot
import sqlglot.errors
from sqlglot import exp


def relevant_first(changes: tuple[str, ...], sqls: tuple[str, ...]) -> tuple[str, ...]:
    """A copy's changes, those that touch what the queries read first: a column they name (`orders.amount`),
    then a table they read, then the rest, each group in the copy's own order. The message shows the first
    three, so the change that can have separated the answers leads, not one to a table neither query reads."""
    tables, columns = read_names(sqls)

    def rank(change: str) -> int:
        words = {w.strip("(),.:;") for w in change.lower().split()}
        if any(f"{t}.{c}" in change.lower() for t in tables for c in columns):
            return 0
        reads_table = words & tables or any(w.split(".", 1)[0] in tables for w in words if "." in w)
        return 1 if reads_table else 2

    return tuple(sorted(changes, key=rank))  # sorted is stable: each group keeps its order


def read_names(sqls: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """The tables and the columns the queries name (lower case); none when a query does not parse."""
    tables: set[str] = set()
    columns: set[str] = set()
    for text in sqls:
        try:
            tree = sqlglot.parse_one(text, read="postgres")
        except sqlglot.errors.SqlglotError:
            continue
        if tree is None:
            continue
        tables |= {t.name.lower() for t in tree.find_all(exp.Table) if t.name}
        columns |= {c.name.lower() for c in tree.find_all(exp.Column) if c.name}
    return tables, columns
