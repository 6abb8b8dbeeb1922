"""A coincidental verdict names first the changes of the copy that touch what the queries read
(bot.run.perturb_relevance): a column they name, then a table they read, then the rest."""

from __future__ import annotations

from bot.run.perturb_relevance import read_names, relevant_first

CHANGES = (
    "duplicates of 2 rows of shops",
    "ads.spend = 0 on 3 rows",
    "orders.created_at at the end of its period on 4 rows",
    "copies of 1 row of orders with status NULL",
    "orders.amount = 100 on 5 rows where amount < 100",
)


def test_the_changes_to_what_the_queries_read_come_first_each_group_in_order() -> None:
    gold = "SELECT sum(amount) FROM orders WHERE amount >= 100"
    pred = "SELECT sum(o.amount) FROM orders o WHERE o.amount > 100"
    assert relevant_first(CHANGES, (gold, pred)) == (
        "orders.amount = 100 on 5 rows where amount < 100",  # a column both read
        "orders.created_at at the end of its period on 4 rows",  # the table, another column
        "copies of 1 row of orders with status NULL",
        "duplicates of 2 rows of shops",  # neither reads these
        "ads.spend = 0 on 3 rows",
    )


def test_an_unparsable_query_leaves_the_order_alone() -> None:
    assert read_names(("SELECT FROM WHERE (",)) == (set(), set())
    assert relevant_first(CHANGES, ("SELECT FROM WHERE (",)) == CHANGES
