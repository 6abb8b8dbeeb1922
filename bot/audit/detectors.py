"""The detectors an audit runs on each case, in order. Each reads a CaseAudit (the case, its golds' results, its
read-only transaction) and returns its suspects; each is independent of the others.

`gold_fails_on_perturbed` runs only with `--perturb K` (CaseAudit.copies), `llm_hint` only with `--llm`
(CaseAudit.hint); without them they find nothing."""

from __future__ import annotations

from collections.abc import Callable

from bot.audit.agreement import detect_agreement
from bot.audit.alternatives import detect_alternatives
from bot.audit.context import CaseAudit
from bot.audit.llm_hint import detect_llm_hint
from bot.audit.model import Suspect
from bot.audit.order_ties import detect_order_ties
from bot.audit.perturbed import detect_perturbed
from bot.audit.results_check import detect_results
from bot.audit.unknown_literal import detect_unknown_literals

Detector = Callable[[CaseAudit], list[Suspect]]

DETECTORS: tuple[tuple[str, Detector], ...] = (
    ("results", detect_results),  # gold_error, empty_result, null_result
    ("order_ties", detect_order_ties),
    ("unknown_literal", detect_unknown_literals),
    ("alternatives_disagree", detect_alternatives),
    ("agreement_against_gold", detect_agreement),
    ("gold_fails_on_perturbed", detect_perturbed),
    ("llm_hint", detect_llm_hint),
)
