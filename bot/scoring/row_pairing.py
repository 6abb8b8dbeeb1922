"""Which rows of a failed comparison pair up, for the first-difference message (firstdiff.py): rows equal on
both sides cancel, then rows equal within the tolerance; the rest pair by a key value, one row on each side, and
any row left is missing (gold) or extra (prediction). Only the message depends on this."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bot.scoring.alignment import Row, key_of
from bot.scoring.values import close

MAX_NEAR = 50  # candidates tried for a row equal within the tolerance


@dataclass
class Pairing:
    """The unmatched rows of both sides, paired by a key value (pair_by_key)."""

    # (number of differing columns, gold position, gold row, prediction row, differing columns)
    changed: list[tuple[int, int, Row, Row, list[int]]] = field(default_factory=list)
    # (position, row): rows left without a partner
    missing: list[tuple[int, Row]] = field(default_factory=list)
    extra: list[tuple[int, Row]] = field(default_factory=list)
    pairs: int = 0


def unmatched_rows(
    g: list[Row], p: list[Row], tol: tuple[float, float]
) -> tuple[list[tuple[int, Row]], list[tuple[int, Row]]]:
    """The rows of each side (with their positions) left after cancelling rows equal on both sides, then rows
    equal within the tolerance (found among rows whose numbers round alike)."""
    gk: list[Any] = g
    pk: list[Any] = p
    try:
        left_p, left_g = Counter(pk), Counter(gk)
    except TypeError:
        gk, pk = [repr(r) for r in g], [repr(r) for r in p]
        left_p, left_g = Counter(pk), Counter(gk)
    out: tuple[list[tuple[int, Row]], list[tuple[int, Row]]] = ([], [])
    for side, hashes, rows, left in ((0, gk, g, left_p), (1, pk, p, left_g)):
        for pos, (h, row) in enumerate(zip(hashes, rows, strict=True)):
            if left[h] > 0:
                left[h] -= 1
            else:
                out[side].append((pos, row))
    rg, rp = out
    if not rg or not rp:
        return rg, rp
    every = tuple(range(len(rg[0][1])))
    near: dict[tuple[Any, ...], list[tuple[int, Row]]] = {}
    for item in rp:
        near.setdefault(key_of(item[1], every), []).append(item)
    kept, taken = [], set()
    for pos, row in rg:
        bucket = near.get(key_of(row, every), [])
        hit = next(
            (
                n
                for n, c in enumerate(bucket[:MAX_NEAR])
                if all(close(a, b, abs_tol=tol[0], rel_tol=tol[1]) for a, b in zip(row, c[1], strict=True))
            ),
            None,
        )
        if hit is None:
            kept.append((pos, row))
        else:
            taken.add(bucket.pop(hit)[0])
    return kept, [item for item in rp if item[0] not in taken]


def pair_by_key(
    rg: list[tuple[int, Row]],
    rp: list[tuple[int, Row]],
    key: tuple[int, ...],
    *,
    width: int,
    tol: tuple[float, float],
) -> Pairing:
    """Pairs the unmatched rows holding the same key value, one on each side; any other row is missing or
    extra (several rows under one key could pair either way, so none is guessed)."""
    others = [i for i in range(width) if i not in key]
    groups: tuple[dict[tuple[Any, ...], list[tuple[int, Row]]], ...] = ({}, {})
    for side, rows in ((0, rg), (1, rp)):
        for pos, row in rows:
            groups[side].setdefault(key_of(row, key), []).append((pos, row))
    out = Pairing()
    for k in list(groups[0]) + [k for k in groups[1] if k not in groups[0]]:
        gl, pl = groups[0].get(k, []), groups[1].get(k, [])
        if len(gl) == len(pl) == 1:
            (gpos, grow), (_, prow) = gl[0], pl[0]
            out.pairs += 1
            diff = [i for i in others if not close(grow[i], prow[i], abs_tol=tol[0], rel_tol=tol[1])]
            if diff:
                out.changed.append((len(diff), gpos, grow, prow, diff))
            continue
        out.missing.extend(gl)
        out.extra.extend(pl)
    return out


def distinct_rows(rows: list[Row]) -> list[Row]:
    try:
        return list(dict.fromkeys(rows))
    except TypeError:
        firsts: dict[str, Row] = {}
        for r in rows:
            firsts.setdefault(repr(r), r)
        return list(firsts.values())
