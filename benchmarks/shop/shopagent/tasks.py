"""Recipes (writes, indexes, views) and preferences, both taken from the KB."""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.kb import KnowledgeBase, Recipe

from .compose import CannotAnswer, Context


def apply_preferences(ctx: Context, text: str) -> None:
    for pref in ctx.kb.preferences:
        if re.search(pref.when, text):
            ctx.use(f"preference:{pref.name}")
            for old, new in pref.replace_filters.items():
                ctx.replace_filters[" ".join(old.split())] = new
            for table, condition in pref.add_filters.items():
                ctx.add_filters.setdefault(table, []).append(condition)


def resolve_table(ctx: Context, words: str) -> str:
    wanted = " ".join(words.lower().split())
    for name, doc in ctx.kb.tables.items():
        if wanted in (name, name.replace("_", " "), *(a.lower() for a in doc.aliases)):
            ctx.use(f"table:{name}")
            return name
    raise CannotAnswer(f"no table called {words!r} in tables.yaml")


def resolve_column(ctx: Context, table: str, words: str) -> str:
    wanted = "_".join(words.lower().split())
    columns = ctx.kb.tables[table].columns
    for candidate in (wanted, f"{wanted}_id", f"{wanted}_date", f"{wanted}_code"):
        if candidate in columns:
            return candidate
    raise CannotAnswer(f"table {table!r} has no column for {words!r}")


def find_recipe(kb: KnowledgeBase, question: str) -> tuple[Recipe, re.Match[str]] | None:
    for recipe in kb.recipes.values():
        for pattern in recipe.patterns:
            m = re.search(pattern, question)
            if m:
                return recipe, m
    return None


def fill_recipe(ctx: Context, recipe: Recipe, m: re.Match[str], answer_read: Callable[[str], str]) -> str:
    """The recipe's SQL with each placeholder filled from the match (tables and columns resolved)."""
    ctx.use(f"recipe:{recipe.name}")
    groups = {k: (v or "").strip() for k, v in m.groupdict().items()}
    values: dict[str, str] = {}
    if "table" in groups:
        values["table"] = resolve_table(ctx, groups["table"])
    if "column" in groups:
        values["column"] = resolve_column(ctx, values["table"], groups["column"])
    if "query" in groups:
        values["query"] = answer_read(groups["query"])
    for key, value in groups.items():
        values.setdefault(key, value.replace("'", "''"))
    return recipe.sql.format(**values)
