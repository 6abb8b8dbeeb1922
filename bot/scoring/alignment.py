"""Lining up two failed results for a person: which prediction column stands for which gold column, and which
columns identify a row on both sides. Guesses here only shape the first-difference message (firstdiff.py);
verdicts never depend on them. Every step works on bounded samples."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bot.scoring.values import signature_value

MAX_SAMPLE = 500  # unmatched rows of each side used to choose a key
MAX_SUBSETS = 256  # column sets tried as a key
MAX_UNIQUE_CHECKS = 16
MAX_MAPPINGS = 8
SIMILARITY_ROWS = 1000
MAX_SIMILARITY_CELLS = 400  # gold width x prediction width beyond which column similarity is not computed

Row = tuple[Any, ...]


def hashable(v: Any) -> Any:
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


def key_of(row: Row, key: tuple[int, ...]) -> tuple[Any, ...]:
    """The row's values in the key columns, numbers rounded as for column signatures (near-equal ones meet)."""
    return tuple(hashable(signature_value(row[i])) for i in key)


def _similarity(g: list[Row], p: list[Row], width: int, pwidth: int) -> list[list[int]] | None:
    """How many values each gold column shares with each prediction column (as multisets, numbers rounded)."""
    if width * pwidth > MAX_SIMILARITY_CELLS:
        return None
    sample_g, sample_p = g[:SIMILARITY_ROWS], p[:SIMILARITY_ROWS]
    gc = [Counter(key_of(r, (i,)) for r in sample_g) for i in range(width)]
    pc = [Counter(key_of(r, (j,)) for r in sample_p) for j in range(pwidth)]
    return [[sum((gc[i] & pc[j]).values()) for j in range(pwidth)] for i in range(width)]


def choose_mapping(
    g: list[Row],
    p: list[Row],
    names: tuple[tuple[str, ...], tuple[str, ...]],
    tried: Sequence[tuple[int, ...]],
) -> tuple[tuple[int, ...], int]:
    """(gold column i -> prediction column mapping[i], the values it lines up): the best of the mappings the
    comparison tried (the first wins ties) and a greedy one by shared values, then same name, then position.

    Without it, a prediction with its columns in another order was explained column by column against the
    wrong columns. The score is 1 when similarity was not computed (too wide to be worth it)."""
    width, pwidth = len(names[0]), len(names[1])
    candidates = [tuple(m) for m in tried[:MAX_MAPPINGS]]
    sim = _similarity(g, p, width, pwidth)
    if sim is None:
        return (candidates[0] if candidates else tuple(range(width))), 1
    gnames = [n.lower() for n in names[0]]
    pnames = [n.lower() for n in names[1]]

    def preference(ij: tuple[int, int]) -> tuple[int, bool, int, tuple[int, int]]:
        i, j = ij
        return -sim[i][j], gnames[i] != pnames[j], abs(i - j), ij

    greedy: dict[int, int] = {}
    for i, j in sorted(itertools.product(range(width), range(pwidth)), key=preference):
        if i not in greedy and j not in greedy.values():
            greedy[i] = j
    candidates.append(tuple(greedy[i] for i in range(width)))
    scores = [sum(sim[i][m[i]] for i in range(width)) for m in candidates]
    best = max(range(len(candidates)), key=lambda k: (scores[k], -k))
    return candidates[best], scores[best]


def _one_to_one(rg: list[Row], rp: list[Row], key: tuple[int, ...]) -> int:
    """Key values held by exactly one row on each side: rows the key pairs beyond doubt."""
    cg = Counter(key_of(r, key) for r in rg)
    cp = Counter(key_of(r, key) for r in rp)
    return sum(1 for k, n in cg.items() if n == 1 and cp.get(k) == 1)


def _unique(rows: list[Row], key: tuple[int, ...]) -> bool:
    seen: set[tuple[Any, ...]] = set()
    for r in rows:
        k = key_of(r, key)
        if k in seen:
            return False
        seen.add(k)
    return True


def choose_key(
    g: list[Row],
    rg: list[Row],
    rp: list[Row],
    *,
    width: int,
    hints: Sequence[tuple[int, ...]],
    infer: bool = True,
) -> tuple[int, ...]:
    """The columns that align rows. `rg`/`rp` are the rows left unmatched on each side, `g` all gold rows.

    The first key from the gold's SQL (`hints`) that pairs some unmatched rows; else the proper column set that
    pairs the most of them one to one and identifies a gold row (the smallest, then the earliest columns);
    else the first hint, or () for no key. Without `infer` (one row on each side, nothing to pair) only the
    SQL's keys are used: a measure that happens to agree on both sides names no row."""
    hints = [h for h in hints if h and all(i < width for i in h)]
    sg, sp = rg[:MAX_SAMPLE], rp[:MAX_SAMPLE]
    fallback = hints[0] if hints else ()
    if not sg or not sp:
        return fallback
    for hint in hints:
        if _one_to_one(sg, sp, hint) > 0:
            return hint
    if not infer:
        return ()
    shared = [i for i in range(width) if {key_of(r, (i,)) for r in sg} & {key_of(r, (i,)) for r in sp}]
    subsets = itertools.islice(
        (c for size in range(1, width) for c in itertools.combinations(shared, size)), MAX_SUBSETS
    )
    scored = [(_one_to_one(sg, sp, key), key) for key in subsets]
    best = max((n for n, _ in scored), default=0)
    if best == 0:
        return fallback
    tops = [key for n, key in scored if n == best]  # already by size, then column order
    for key in tops[:MAX_UNIQUE_CHECKS]:
        if _unique(g, key):
            return key
    return fallback
