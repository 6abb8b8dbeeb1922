"""Exact tests for paired pass/fail outcomes (stdlib only): is the head's pass count significantly lower?

McNemar's test looks only at the discordant pairs of paired attempts: `b` attempts passed in base and failed in
head, `c` failed in base and passed in head. Under "no change" each discordant pair is a fair coin, so the exact
one-sided p-value for "head is worse" is P(X >= b) with X ~ Binomial(b + c, 1/2).
"""

from __future__ import annotations

from math import comb


def binomial_tail(k: int, n: int, p: float = 0.5) -> float:
    """P(X >= k) for X ~ Binomial(n, p). Exact (integer arithmetic) when p is 1/2."""
    if n < 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"binomial_tail needs n >= 0 and 0 <= p <= 1, got n={n}, p={p}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p == 0.5:
        return sum(comb(n, i) for i in range(k, n + 1)) / 2**n
    return min(1.0, sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def mcnemar_one_sided(b: int, c: int) -> float:
    """Exact one-sided McNemar p-value that the `b` direction dominates: P(X >= b | n = b + c, 1/2).

    1.0 when there is no discordant pair (nothing moved, so no evidence of a change)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    return binomial_tail(b, b + c)


def mcnemar_two_sided(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: twice the smaller tail, capped at 1."""
    return min(1.0, 2 * mcnemar_one_sided(max(b, c), min(b, c)))


def discordant_pairs(base: list[bool], head: list[bool]) -> tuple[int, int]:
    """(b, c) over paired attempts i: b = base passed and head failed, c = base failed and head passed.

    Attempts are paired by position; when the runs repeated a different number of times, the extra attempts
    of the longer one are left unpaired."""
    b = sum(1 for x, y in zip(base, head, strict=False) if x and not y)
    c = sum(1 for x, y in zip(base, head, strict=False) if y and not x)
    return b, c
