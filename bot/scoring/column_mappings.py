"""Which prediction column stands for which gold column, as candidates for the row comparison to verify:
positional, by name, by value signature (bounded); and projecting rows through a mapping."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from bot.base.results import ResultSet
from bot.scoring.values import APPROX_OIDS, signature_value, sort_key

MAX_PERMUTATIONS = 720


def project(rows: list[tuple[Any, ...]], mapping: tuple[int, ...]) -> list[tuple[Any, ...]]:
    if mapping == tuple(range(len(mapping))) and rows and len(rows[0]) == len(mapping):
        return rows
    return [tuple(r[i] for i in mapping) for r in rows]


def _signature(rows: list[tuple[Any, ...]], col: int) -> int:
    return hash(tuple(sorted((signature_value(r[col]) for r in rows), key=sort_key)))


def candidate_mappings(
    gold: ResultSet, pred: ResultSet, g: list, p: list, mode: str
) -> Iterator[tuple[int, ...]]:
    """Column mappings worth verifying, most plausible first: positional, by name, by value signature.

    Lazy: signatures (a sort of every column) are computed only when the cheaper candidates failed."""
    gw, pw = len(gold.columns), len(pred.columns)
    seen: set[tuple[int, ...]] = set()
    if gw == pw:
        seen.add(tuple(range(gw)))
        yield tuple(range(gw))
    if mode == "positional" or (mode == "permute" and gw != pw) or gw > pw:
        return
    gnames = [c.lower() for c in gold.columns]
    pnames = [c.lower() for c in pred.columns]
    if len(set(gnames)) == gw and len(set(pnames)) == pw and set(gnames) <= set(pnames):
        by_name = tuple(pnames.index(n) for n in gnames)
        if by_name not in seen:
            seen.add(by_name)
            yield by_name
    gsig = [_signature(g, i) for i in range(gw)]
    psig = [_signature(p, j) for j in range(pw)]
    choices = [[j for j in range(pw) if psig[j] == gsig[i]] for i in range(gw)]
    if not all(choices):
        return
    for count, combo in enumerate(itertools.product(*choices)):
        if count >= MAX_PERMUTATIONS:
            return
        if len(set(combo)) == gw and combo not in seen:
            seen.add(combo)
            yield tuple(combo)


def approx_columns(gold: ResultSet, pred: ResultSet, mapping: tuple[int, ...]) -> list[int]:
    return [
        i
        for i, j in enumerate(mapping)
        if gold.type_oids[i] in APPROX_OIDS or pred.type_oids[j] in APPROX_OIDS
    ]
