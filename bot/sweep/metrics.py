"""The numbers of one sweep setting, and of one setting against the first (paired by case id).

- pass rate: passed over decidable cases (invalid ones excluded), overall, per category and per tag;
- with K repeats: pass@K (at least one of the K attempts passed) and pass^K (every attempt passed), over the
  decidable cases; with n attempts of which c passed, the unbiased estimators 1 - C(n-c, k)/C(n, k) and
  C(c, k)/C(n, k) (Chen et al. 2021; Yao et al. 2024, tau-bench), which are exactly "any" and "all" at k = n;
- won / lost against the first setting: cases that pass here and fail there, and the reverse, over the cases
  both decided; McNemar's exact two-sided p over the paired attempts (each attempt i of a case with attempt i of
  the same case in the first setting; with one attempt each, the cases);
- LLM calls, tokens, cost (meta.llm), agent calls, and the agent's latency per case (p50, p95).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.base.results import CaseResult, RunResult
from bot.base.stats import discordant_pairs, mcnemar_two_sided


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k attempts drawn from n passes), c of the n passed."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all k attempts drawn from n pass), c of the n passed."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_hat_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation between closest ranks; None for no value."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def decidable(case: CaseResult) -> bool:
    return case.status != "invalid"


def attempt_passes(case: CaseResult) -> list[bool]:
    """Each attempt's outcome (one for a run without repeats)."""
    if case.attempts:
        return [a.status == "passed" for a in case.attempts]
    return [case.status == "passed"]


@dataclass(frozen=True)
class Repeated:
    k: int
    pass_at_k: float | None
    pass_hat_k: float | None


def repeated(run: RunResult) -> Repeated | None:
    """pass@K and pass^K over the decidable cases, K the run's repeats; None without repeats."""
    k = run.meta.repeats
    if k <= 1:
        return None
    at, hat = [], []
    for case in run.cases:
        if not decidable(case):
            continue
        outcomes = attempt_passes(case)
        n, c = len(outcomes), sum(outcomes)
        kk = min(k, n)
        at.append(pass_at_k(n, c, kk))
        hat.append(pass_hat_k(n, c, kk))
    if not at:
        return Repeated(k=k, pass_at_k=None, pass_hat_k=None)
    return Repeated(k=k, pass_at_k=sum(at) / len(at), pass_hat_k=sum(hat) / len(hat))


@dataclass(frozen=True)
class Paired:
    compared: int  # cases decided in both settings
    won: tuple[str, ...]  # pass here, fail in the first setting
    lost: tuple[str, ...]  # fail here, pass in the first setting
    b: int  # discordant attempts: first passed, this one failed
    c: int  # discordant attempts: first failed, this one passed
    p_value: float  # McNemar, exact, two-sided, over the paired attempts


def paired(first: RunResult, other: RunResult) -> Paired:
    mine = {c.id: c for c in other.cases if decidable(c)}
    won, lost, base_all, head_all = [], [], [], []
    compared = 0
    for case in first.cases:
        there = mine.get(case.id)
        if there is None or not decidable(case):
            continue
        compared += 1
        before, after = case.status == "passed", there.status == "passed"
        if after and not before:
            won.append(case.id)
        elif before and not after:
            lost.append(case.id)
        before_all, after_all = attempt_passes(case), attempt_passes(there)
        n = min(len(before_all), len(after_all))
        base_all += before_all[:n]
        head_all += after_all[:n]
    b, c = discordant_pairs(base_all, head_all)
    return Paired(
        compared=compared, won=tuple(won), lost=tuple(lost), b=b, c=c, p_value=mcnemar_two_sided(b, c)
    )


def latency(run: RunResult) -> tuple[float | None, float | None]:
    """The agent's seconds per case (timings.agent_s, else the prediction's duration): p50, p95."""
    values = []
    for case in run.cases:
        value = case.timings.get("agent_s", case.prediction.duration_s)
        if value is not None:
            values.append(float(value))
    return percentile(values, 0.5), percentile(values, 0.95)
