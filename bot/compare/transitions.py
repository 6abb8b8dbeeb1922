"""Per-case changes between two runs, for bot.compare.comparison (which re-exports these names). Pure.

- CaseChange and its Transition: one case's change from base to head.
- classify_case: a case's transition. When a repeated case's attempts disagree, McNemar's test on the paired
  attempts decides between regressed, fixed and flaky (too small or not significant under the gate).
- pair_cases: every case of two runs, paired by id, then the removed and new cases whose content hash matches
  one to one as renames (find_renames); a case that keeps its id but changes its content is marked `edited`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from bot.base.errors import ResultFileError
from bot.base.results import CaseResult, FrozenModel, RunResult
from bot.base.stats import discordant_pairs, mcnemar_one_sided
from bot.config.gate_settings import GateSettings

Transition = Literal[
    "still_passing",  # passed in both
    "regressed",  # passed in base, fails or errors in head (significantly, when repeated)
    "fixed",  # failed in base, passes in head
    "still_failing",  # failed (or errored) in both
    "new",  # only in head
    "removed",  # only in base
    "renamed",  # only in base under one id, only in head under another, same content: judged by `outcome`
    "became_invalid",  # decidable in base, invalid in head (the gold broke, or the fixture)
    "became_valid",  # invalid in base, decidable in head
    "error_changed",  # failed or errored in both, with a different error class
    "flaky",  # attempts disagree and the difference is not significant: labelled, never failed
]
TRANSITIONS: tuple[str, ...] = (
    "regressed",
    "fixed",
    "flaky",
    "became_invalid",
    "error_changed",
    "renamed",
    "new",
    "removed",
    "became_valid",
    "still_failing",
    "still_passing",
)


class CaseChange(FrozenModel):
    id: str  # the head's id (the base's, for a removed case)
    transition: Transition
    category: str = ""
    tags: tuple[str, ...] = ()
    question: str = ""
    base_status: str | None = None
    head_status: str | None = None
    base_passes: int = 0
    base_repeats: int = 0
    head_passes: int = 0
    head_repeats: int = 0
    flaky: bool = False  # attempts disagree (in base or in head)
    p_value: float | None = None  # exact McNemar on paired attempts, when repeated
    base_error_class: str | None = None
    head_error_class: str | None = None
    reason: str = ""  # the head's first difference (or the base's, for a fix)
    structural: str = ""  # the head's structural diff in words, when there is one
    head_sql: str | None = None
    base_sql: str | None = None
    source: str | None = None  # case file:line
    renamed_from: str | None = None  # renamed: the id the case had in base
    outcome: Transition | None = None  # renamed: the pair's own transition (still_passing, regressed, ...)
    # From the suite, when the caller had it (check does; see bot.compare.causes), else what the runs recorded
    # for a case that did not pass (CaseResult.gold_sql).
    gold_sql: tuple[str, ...] = ()
    head_used: tuple[str, ...] = ()  # the KB spans each side's answer said it used (Prediction.used)
    base_used: tuple[str, ...] = ()
    # The same id with other content (question, database, gold SQL or category): each side was judged by its
    # own version of the case, so a changed gold can turn a break into a pass. Reported, never hidden.
    edited: bool = False
    # `check` also judges the head's answer to an edited case by the base's version of the case (its gold, in the
    # base's tree): that status, when it did. A case that passed on base and fails its base version is refused by
    # the gate unless `allow_edited`, so a gold rewritten to match a broken answer cannot pass.
    against_base: str | None = None

    @property
    def judged(self) -> Transition:
        """The transition the gate judges: a renamed case by its own outcome, every other by its transition."""
        return self.outcome if self.transition == "renamed" and self.outcome else self.transition


def _order(change: CaseChange) -> tuple[int, int, str]:
    """By transition; renamed cases by their outcome within (a renamed regression first); then by id."""
    return TRANSITIONS.index(change.transition), TRANSITIONS.index(change.judged), change.id


def pair_cases(
    base: RunResult,
    head: RunResult,
    *,
    gate: GateSettings = GateSettings(),
    against_base: dict[str, str] | None = None,
) -> list[CaseChange]:
    """Every case's change, in report order: pairs by id, then the removed and new cases that are renames.
    `against_base`: {id: status} of the head's answers to edited cases judged by the base's version."""
    base_cases, head_cases = _by_id(base, "base"), _by_id(head, "head")
    renames = find_renames(base_cases, head_cases)  # head id -> base id
    renamed_base = set(renames.values())
    changes = []
    for i in base_cases | head_cases:
        if i in renames:
            changes.append(_renamed(base_cases[renames[i]], head_cases[i], gate))
        elif i not in renamed_base:
            change = classify_case(base_cases.get(i), head_cases.get(i), gate=gate)
            if is_edited(base_cases.get(i), head_cases.get(i)):
                change = change.model_copy(
                    update={"edited": True, "against_base": (against_base or {}).get(i)}
                )
            changes.append(change)
    changes.sort(key=_order)
    return changes


def find_renames(base: dict[str, CaseResult], head: dict[str, CaseResult]) -> dict[str, str]:
    """{head id: base id} for each case only in base and case only in head with the same content hash, when
    that hash is unique on both sides (two cases asking the same thing cannot tell which is which)."""
    removed: dict[str, list[str]] = defaultdict(list)
    new: dict[str, list[str]] = defaultdict(list)
    for i, case in base.items():
        if i not in head and case.case_hash:
            removed[case.case_hash].append(i)
    for i, case in head.items():
        if i not in base and case.case_hash:
            new[case.case_hash].append(i)
    return {new[h][0]: ids[0] for h, ids in removed.items() if len(ids) == 1 and len(new.get(h, ())) == 1}


def is_edited(base: CaseResult | None, head: CaseResult | None) -> bool:
    """The same case id with other content on the two sides: what it asks (question, database, gold SQL or
    category), or what else decides its verdict (setup, checks, compare options, ...: CaseResult.judge_hash)."""
    if not (base and head):
        return False
    asked = bool(base.case_hash and head.case_hash and base.case_hash != head.case_hash)
    judged = bool(base.judge_hash and head.judge_hash and base.judge_hash != head.judge_hash)
    return asked or judged


def edited_warning(changes: list[CaseChange]) -> list[str]:
    """The cases this change edited, for the reports' notes: their verdicts use the new version."""
    ids = [c.id for c in changes if c.edited]
    if not ids:
        return []
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    judged = [c for c in changes if c.edited and c.against_base is not None]
    also = (
        f"; the head's answers were also judged by the base's version ({_judgements(judged)})"
        if judged
        else ""
    )
    return [
        f"{len(ids)} case(s) edited by this change (question, database, gold SQL or category): {shown}. Each "
        "side was judged by its own version, so review that the new gold still asks what the old one did"
        + also
    ]


def _judgements(changes: list[CaseChange]) -> str:
    shown = [f"{c.id}: {c.against_base}" for c in changes[:10]]
    return ", ".join(shown) + (f" and {len(changes) - 10} more" if len(changes) > 10 else "")


def fails_base_version(change: CaseChange) -> bool:
    """An edited case that passed on base whose head answer fails the base's version of the case."""
    return (
        change.edited
        and change.base_status == "passed"
        and change.against_base is not None
        and change.against_base != "passed"
    )


def _renamed(base: CaseResult, head: CaseResult, gate: GateSettings) -> CaseChange:
    change = classify_case(base, head, gate=gate)
    return change.model_copy(
        update={"transition": "renamed", "outcome": change.transition, "renamed_from": base.id}
    )


def _by_id(run: RunResult, name: str) -> dict[str, CaseResult]:
    cases: dict[str, CaseResult] = {}
    for case in run.cases:
        if case.id in cases:
            raise ResultFileError(f"the {name} run holds case {case.id!r} twice", case_id=case.id)
        cases[case.id] = case
    return cases


def _outcomes(case: CaseResult) -> list[bool]:
    """Pass (True) or not, per attempt; a run without repeats has one attempt: the case itself."""
    return [a.status == "passed" for a in case.attempts] if case.attempts else [case.status == "passed"]


def _transition(base: CaseResult, head: CaseResult, gate: GateSettings) -> tuple[Transition, float | None]:
    """Both sides decidable: the classic transition when every attempt agrees, else McNemar on the pairs."""
    b_out, h_out = _outcomes(base), _outcomes(head)
    b, c = discordant_pairs(b_out, h_out)
    # The p-value of the observed direction; meaningful only when a side repeated (K > 1).
    p_value = mcnemar_one_sided(max(b, c), min(b, c)) if max(len(b_out), len(h_out)) > 1 else None
    if len(set(b_out)) == 1 and len(set(h_out)) == 1:  # no disagreement within either run
        before, after = b_out[0], h_out[0]
        if before and after:
            return "still_passing", p_value
        if before != after:
            return ("regressed" if before else "fixed"), p_value
        changed = base.error_class != head.error_class
        return ("error_changed" if changed else "still_failing"), p_value
    if b - c >= gate.min_regression_count and mcnemar_one_sided(b, c) < gate.alpha:
        return "regressed", mcnemar_one_sided(b, c)
    if c - b >= gate.min_regression_count and mcnemar_one_sided(c, b) < gate.alpha:
        return "fixed", mcnemar_one_sided(c, b)
    return "flaky", p_value


def _first_failure(case: CaseResult | None) -> str:
    if case is None:
        return ""
    failing = (a.reason for a in case.attempts if a.status != "passed" and a.reason)
    return case.reason or next(failing, "")


def classify_case(
    base: CaseResult | None, head: CaseResult | None, *, gate: GateSettings = GateSettings()
) -> CaseChange:
    """One case's change from base to head (either may be None: a new or a removed case)."""
    either = head or base
    if either is None:
        raise ValueError("classify_case needs a base or a head case")
    p_value: float | None = None
    if base is None:
        transition: Transition = "new"
    elif head is None:
        transition = "removed"
    elif head.status == "invalid":
        transition = "still_failing" if base.status == "invalid" else "became_invalid"
    elif base.status == "invalid":
        transition = "became_valid"
    else:
        transition, p_value = _transition(base, head, gate)
    flaky = any(len(set(_outcomes(c))) > 1 for c in (base, head) if c is not None)
    if transition in ("fixed", "removed"):
        reason = _first_failure(base)
    else:
        reason = _first_failure(head) or (_first_failure(base) if transition == "flaky" else "")
    structural = head.verdicts.get("structural") if head else None
    return CaseChange(
        id=either.id,
        transition=transition,
        category=either.category,
        tags=either.tags,
        question=either.question,
        base_status=base.status if base else None,
        head_status=head.status if head else None,
        base_passes=base.passes if base else 0,
        base_repeats=base.repeats if base else 0,
        head_passes=head.passes if head else 0,
        head_repeats=head.repeats if head else 0,
        flaky=flaky,
        p_value=p_value,
        base_error_class=base.error_class if base else None,
        head_error_class=head.error_class if head else None,
        reason=reason,
        structural=structural.message if structural else "",
        head_sql=head.prediction.sql if head else None,
        base_sql=base.prediction.sql if base else None,
        source=either.source,
        head_used=head.prediction.used if head else (),
        base_used=base.prediction.used if base else (),
        gold_sql=(head.gold_sql if head else ()) or (base.gold_sql if base else ()),  # what the runs recorded
    )


def new_cases(head: RunResult, *, gate: GateSettings = GateSettings()) -> list[CaseChange]:
    """Every case of a run without a baseline, as a `new` change, in report order."""
    changes = [classify_case(None, case, gate=gate) for case in _by_id(head, "head").values()]
    changes.sort(key=_order)
    return changes
