"""The quality gate: which settings apply (`resolve_gate`), whether a comparison passes and why (`gate_reasons`),
and what a verdict means to a shell (`exit_code`) and to GitHub (`check_conclusion`): one place for each.

`gate_reasons` is called by bot.compare.comparison after classifying every case; it reads CaseChange and RateDelta only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from bot.base.errors import EXIT_BAD_INPUT, EXIT_GATE, EXIT_OK, ConfigError
from bot.compare.deltas import RateDelta
from bot.compare.metrics import NAMES, Metric, MetricDelta, shown
from bot.compare.transitions import CaseChange, fails_base_version
from bot.config.gate_settings import GateSettings

GATE_FIELDS: tuple[str, ...] = tuple(GateSettings.model_fields)
_EXIT = {"pass": EXIT_OK, "regressions": EXIT_GATE, "incomparable": EXIT_BAD_INPUT}
_CONCLUSION: dict[str, Literal["success", "failure", "neutral"]] = {
    "pass": "success",
    "regressions": "failure",
    "incomparable": "failure",  # exit 2: nothing was judged (never green, nor a neutral a status shows green)
}


def resolve_gate(config_gate: GateSettings | None, overrides: Mapping[str, Any]) -> GateSettings:
    """The config's `gate:` (for a check, the base commit's: a change must not loosen the rules it is judged by),
    overridden by the settings the user gave explicitly (flags, action inputs); None values are not given."""
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - set(GATE_FIELDS))
    if unknown:
        raise ConfigError(f"unknown gate setting {unknown[0]!r} (known: {', '.join(GATE_FIELDS)})")
    try:
        return GateSettings(**{**(config_gate or GateSettings()).model_dump(), **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = "--" + str(err["loc"][0]).replace("_", "-") if err["loc"] else "gate"
        raise ConfigError(f"{flag}: {err['msg']}") from exc


def exit_code(verdict: str) -> int:
    """pass 0, regressions 1, incomparable 2."""
    return _EXIT[verdict]


def check_conclusion(verdict: str, *, enforce: bool = True) -> Literal["success", "failure", "neutral"]:
    """A GitHub check run's conclusion; `enforce` False (fail-on-regression off) reports without failing."""
    conclusion = _CONCLUSION[verdict]
    return "neutral" if verdict == "regressions" and not enforce else conclusion


_EPS = 1e-9  # pass rates are ratios of small integers: 0.9 must not be "below" 0.9 by a rounding error
_LISTED = 10  # case ids named in a reason before "and N more"


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _ids(changes: list[CaseChange]) -> str:
    ids = [f"{c.id} (renamed from {c.renamed_from})" if c.renamed_from else c.id for c in changes]
    more = f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else ""
    return ", ".join(ids[:_LISTED]) + more


def gate_reasons(
    changes: list[CaseChange], overall: RateDelta, gate: GateSettings, *, judge_removed: bool = True
) -> list[str]:
    """Why the gate fails, in plain words; empty when it passes. `judge_removed` False: the runs hold
    different selections of the suite (a forced comparison), so a case missing from head was not deleted."""
    reasons = []
    regressed = [c for c in changes if c.judged == "regressed"]
    if len(regressed) > gate.max_regressions:
        reasons.append(
            f"{len(regressed)} case(s) regressed, more than the {gate.max_regressions} allowed: "
            f"{_ids(regressed)}"
        )
    broke = [c for c in changes if c.judged == "became_invalid" and c.base_status == "passed"]
    if broke and not gate.allow_invalid:
        reasons.append(
            f"{len(broke)} case(s) passed on base and are invalid on head (the gold SQL or the fixture "
            f"broke): {_ids(broke)}; set gate.allow_invalid: true (or --allow-invalid) to accept that"
        )
    removed = [c for c in changes if c.transition == "removed"]
    if removed and judge_removed and not gate.allow_removed:
        reasons.append(
            f"{len(removed)} case(s) removed, and a deleted case cannot fail: {_ids(removed)}; "
            "set gate.allow_removed: true (or --allow-removed) to accept removals"
        )
    hidden = [c for c in changes if fails_base_version(c) and c.judged != "regressed"]
    if hidden and not gate.allow_edited:
        reasons.append(
            f"{len(hidden)} edited case(s) passed on base, and the head's answer fails the base's version "
            f"of the case (it passes only the head's new version): {_ids(hidden)}; set "
            "gate.allow_edited: true (or --allow-edited) to accept the edit"
        )
    reasons += pass_rate_floor(overall.head_rate, gate)
    head_rate, base_rate = overall.head_rate, overall.base_rate
    if gate.max_pass_rate_drop is not None and head_rate is not None and base_rate is not None:
        drop = base_rate - head_rate
        if drop > gate.max_pass_rate_drop + _EPS:
            reasons.append(
                f"pass rate dropped {drop * 100:.1f} points ({_pct(base_rate)} → {_pct(head_rate)}), "
                f"more than the {gate.max_pass_rate_drop * 100:.1f} allowed"
            )
    return reasons


_LIMITS: dict[Metric, str] = {
    "cost": "max_cost_increase",
    "tokens": "max_tokens_increase",
    "latency": "max_latency_increase",
    "query_cost": "max_query_cost_increase",
}


def metric_reasons(metrics: Sequence[MetricDelta], gate: GateSettings) -> list[str]:
    """Each gated metric whose median per case rose more than the gate allows, where the rise is significant
    (its 95% interval lies wholly above zero), naming the cases that moved most."""
    reasons = []
    for d in metrics:
        limit = getattr(gate, _LIMITS[d.metric])
        if limit is None or not d.gated or not d.increased:
            continue
        if d.change is not None and d.change <= limit + _EPS:
            continue
        rise = f"rose {d.change:.0%}" if d.change is not None else "rose from zero"
        moved = ", ".join(
            f"{m.id} ({shown(d.metric, m.base)} → {shown(d.metric, m.head)})" for m in d.moved[:3]
        )
        reasons.append(
            f"median {NAMES[d.metric]} per case {rise} ({shown(d.metric, d.base_median)} → "
            f"{shown(d.metric, d.head_median)} over {d.pairs} case(s); 95% interval of the change per case "
            f"{shown(d.metric, d.ci_low)} to {shown(d.metric, d.ci_high)}), more than the {limit:.0%} allowed "
            f"(gate.{_LIMITS[d.metric]})" + (f"; moved most: {moved}" if moved else "")
        )
    return reasons


def pass_rate_floor(head_rate: float | None, gate: GateSettings) -> list[str]:
    if gate.min_pass_rate is None:
        return []
    if head_rate is None:
        return [
            f"the head run has no decidable case, so it cannot reach the minimum pass rate "
            f"{_pct(gate.min_pass_rate)}"
        ]
    if head_rate < gate.min_pass_rate - _EPS:
        return [f"head pass rate {_pct(head_rate)} is below the minimum {_pct(gate.min_pass_rate)}"]
    return []
