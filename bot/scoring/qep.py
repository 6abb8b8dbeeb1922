"""The `qep` scorer: an efficiency case passes when the results are right and the plan is cheaper."""

from __future__ import annotations

from bot.base.results import Verdict

_EPS = 1e-9


def qep_verdict(
    *,
    results_match: bool | None,
    pred_cost: float | None,
    reference_cost: float | None,
    threshold: float,
    strictly_cheaper: bool,
    reference: str,
    error: str | None = None,
) -> Verdict:
    """`reference` names what was measured against ("the slow query", "the gold", "the plan before")."""
    details = {
        "pred_cost": pred_cost,
        "reference_cost": reference_cost,
        "threshold": threshold,
        "reference": reference,
    }
    if error:
        return Verdict(scorer="qep", match=False, kind="pred_error", message=error, details=details)
    if pred_cost is None or reference_cost is None:
        return Verdict(scorer="qep", match=None, kind="undecidable", message="no plan cost", details=details)
    limit = (1 - threshold) * reference_cost
    ratio = pred_cost / reference_cost if reference_cost else None
    details["ratio"] = ratio
    cheaper = pred_cost <= limit * (1 + _EPS) and (
        not strictly_cheaper or pred_cost < reference_cost * (1 - _EPS)
    )
    if results_match is False:
        return Verdict(
            scorer="qep",
            match=False,
            kind="wrong_results",
            message="the rewrite returns different results",
            details=details,
        )
    if not cheaper:
        need = f"at most {limit:.2f}" if threshold else f"below {reference_cost:.2f}"
        return Verdict(
            scorer="qep",
            match=False,
            kind="not_cheaper",
            message=f"plan cost {pred_cost:.2f} is not {need} ({reference} costs {reference_cost:.2f})",
            details=details,
        )
    return Verdict(
        scorer="qep",
        match=True,
        kind="cheaper",
        message=f"plan cost {pred_cost:.2f} vs {reference_cost:.2f} for {reference}"
        + (f" ({ratio:.0%})" if ratio is not None else ""),
        details=details,
    )
