"""Which hunk broke it, in one call for a check: the KB changes of the diff, each regressed case's causal changes,
and the verified partial revert (bot.attribution.hunks, .delta, .evaluator, .revert)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.attribution.delta import Attribution, Status, attribute
from bot.attribution.evaluator import TreeEvaluator
from bot.attribution.head_agent import AgentLike
from bot.attribution.hunks import ChangeSet, kb_changes
from bot.attribution.revert import RevertCandidate, partial_revert
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.compare.diff import FileDiff
from bot.config.model import Config
from bot.db.provision import Server
from bot.run.runner import RunOptions


class _Idle:
    """The evaluator when there is nothing to ask."""

    agent_calls = 0

    def evaluate(self, reverted: frozenset[int], ids: Sequence[str]) -> dict[str, Status]:
        raise AssertionError("nothing is asked when the pull request changed no KB file")


@dataclass(frozen=True)
class CausalFindings:
    changes: ChangeSet
    attribution: Attribution
    revert: RevertCandidate
    agent_calls: int  # everything asked: attribution and verification
    sandbox: str | None  # how the agent ran ("uid 61234"), None when no sandbox was needed or possible


@dataclass(frozen=True)
class CauseRequest:
    """What attribution is asked: the pull request's `diff` between the two trees (both must still exist), the
    head's config, suite and statuses (`head`: {case id: status at the head} of every case), and the cases that
    regressed."""

    diff: Sequence[FileDiff]
    config: Config
    base_root: Path
    head_root: Path
    suite: Suite
    head: Mapping[str, str]
    regressed: Collection[str]
    agent: AgentLike | None = None  # the head run's agent (default: the config's)
    run_options: RunOptions | None = None
    base_pass_rate: float | None = None
    max_agent_calls: int | None = 200


def find_causes(req: CauseRequest, *, server: Server, settings: Settings) -> CausalFindings:
    """Attribute each regressed case to the KB changes of the diff that broke it and verify their partial revert
    on the whole suite. The agent runs on a copy of the head's tree, removed before this returns."""
    changes = kb_changes(req.diff, config=req.config, base_root=req.base_root, head_root=req.head_root)
    regressed, head = req.regressed, req.head
    if not changes.changes or not regressed:  # nothing to revert, nothing to ask: no copy of the tree either
        idle = _Idle()
        attribution = attribute(regressed, changes, idle)
        revert = partial_revert(
            attribution, changes, idle, head=head, regressed=regressed, base_pass_rate=req.base_pass_rate
        )
        return CausalFindings(
            changes=changes, attribution=attribution, revert=revert, agent_calls=0, sandbox=None
        )
    with TreeEvaluator(
        root=req.head_root,
        changes=changes,
        config=req.config,
        suite=req.suite,
        server=server,
        settings=settings,
        agent=req.agent,
        run_options=req.run_options,
    ) as evaluator:
        attribution = attribute(regressed, changes, evaluator, max_agent_calls=req.max_agent_calls)
        revert = partial_revert(
            attribution, changes, evaluator, head=head, regressed=regressed, base_pass_rate=req.base_pass_rate
        )
        return CausalFindings(
            changes=changes,
            attribution=attribution,
            revert=revert,
            agent_calls=evaluator.agent_calls,
            sandbox=evaluator.isolation,
        )


def causal_notes(found: CausalFindings) -> tuple[str, ...]:
    """The findings in words, for the reports' notes: which KB change broke which cases (proven by reverting
    it and asking the agent again), the cases no KB change explains, and whether the partial revert holds."""
    by_change: dict[str, list[str]] = {}
    not_kb: list[str] = []
    for case in found.attribution.cases:
        if case.verdict == "caused":
            for change in found.attribution.causes(case.id):
                by_change.setdefault(f"`{change.file}` {change.where}", []).append(case.id)
        elif case.verdict == "not_kb":
            not_kb.append(case.id)
    notes = [
        f"reverting {where} alone makes {', '.join(ids)} pass again: that change broke them"
        for where, ids in by_change.items()
    ]
    if not_kb:
        notes.append(
            f"no KB change of this pull request explains {', '.join(not_kb)}: reverting them all does not help"
        )
    revert = found.revert
    if revert.holds:
        notes.append(
            f"a partial revert of {len(revert.reverted)} KB line change(s) restores {len(revert.restored)} case(s) "
            f"and keeps every passing case and the pull request's other {len(revert.kept)} change(s)"
        )
    elif by_change and revert.reason:
        notes.append(f"no partial revert holds: {revert.reason}")
    return tuple(notes)
