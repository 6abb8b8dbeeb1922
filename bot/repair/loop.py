"""The repair loop: for each failing case ask the LLM for KB edits, prove each one on PostgreSQL against the
whole suite, keep it only when it fixes the case and breaks nothing that passed.

Every write goes through one `Transaction`: Ctrl-C, SIGTERM or a crash put the KB back as it was before the
repair started (a SIGKILL is undone by `recover()` on the next start). Edits proven good are kept when the
loop ends normally or stops early on an LLM error or the call budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.agents.base import AgentAdapter
from bot.base.results import CaseResult, RunResult
from bot.cases.model import Case, Suite
from bot.compare.comparison import Comparison
from bot.compare.diff import unified_diff
from bot.db.provision import Server
from bot.kb.files import KBFiles
from bot.llm.protocol import JsonLLM
from bot.llm.usage import usage_record
from bot.repair.context import failure_context
from bot.repair.dryrun import DRY_RUN_REASON
from bot.repair.llm_call import Stop, check_budget, request_plan
from bot.repair.outcome import (
    AttemptOutcome,
    AttemptRecord,
    CaseRepair,
    CritiqueRecord,
    LLMStats,
)
from bot.repair.plan import CheckedPlan, Plan, PlanError, check_plan, combine_held, parse_plan
from bot.repair.prompts import case_messages, critique_messages
from bot.repair.setup import Limits
from bot.repair.transaction import Transaction
from bot.run.runner import RunOptions, run_suite


@dataclass
class RepairLoop:
    run: RunResult
    suite: Suite
    server: Server
    client: JsonLLM | None  # None: the suite is evaluated only
    kb: KBFiles
    tx: Transaction | None
    limits: Limits
    agent_factory: Callable[[], AgentAdapter]
    opts: RunOptions
    dry_run: bool
    secrets: tuple[str, ...] = ()  # masked out of every prompt
    latest: dict[str, CaseResult] = field(default_factory=dict)
    initial: dict[str, str | None] = field(default_factory=dict)
    requests: int = 0
    started: float = field(default_factory=time.monotonic)
    cached: int = 0
    stopped: str | None = None
    issues: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    comparison: Comparison | None = None  # a check's (repair --from-check): cause links for the prompts
    baseline: dict[str, CaseResult] = field(default_factory=dict)  # the whole suite before any edit
    held: CheckedPlan | None = None  # the last plan the KB validator alone refused (plan.combine_held)
    config_max_calls: int | None = (
        None  # the config's llm.budget.max_calls: named when it is the tighter limit
    )

    # -- running the suite ---------------------------------------------------------------------------------
    def _run(self, cases: list[Case]) -> dict[str, CaseResult]:
        result = run_suite(self.suite, cases, self.agent_factory(), self.server, self.opts)
        return {c.id: c for c in result.cases}

    def full_run(self) -> dict[str, CaseResult]:
        return self._run(list(self.suite.cases))

    def passed(self) -> set[str]:
        return {k for k, v in self.latest.items() if v.status == "passed"}

    # -- asking ----------------------------------------------------------------------------------------------
    def ask(
        self, messages: list[dict], purpose: str, *, n: int = 1, room: int | None = None
    ) -> tuple[Plan | None, str, bool]:
        """(plan, why there is none, cached). Raises Stop when the budget is spent or the LLM is unusable.
        `n`: the attempt (a retry samples warmer); `room`: the reply's token cap (bot.repair.llm_call)."""
        check_budget(self.limits, self.config_max_calls, requests=self.requests, started=self.started)
        self.requests += 1
        if self.client is None:
            raise Stop("no LLM: the suite is evaluated only")
        reply, why = request_plan(
            self.client,
            self.limits,
            messages,
            purpose,
            n=n,
            room=room,
            config_max_calls=self.config_max_calls,
        )
        if reply is None:
            return None, why, False
        self.cached += int(reply.cached)
        try:
            return parse_plan(reply.data), "", reply.cached
        except PlanError as exc:
            return None, f"your reply is not a valid plan: {exc}", reply.cached

    # -- trying a plan ---------------------------------------------------------------------------------------
    def apply(self, checked: CheckedPlan) -> dict[str, str | None]:
        assert self.tx is not None
        for path, text in checked.originals.items():
            self.initial.setdefault(path, text)
        return self.tx.apply(checked.changes)

    def verify(
        self, checked: CheckedPlan, case_id: str | None
    ) -> tuple[AttemptOutcome, str, tuple[str, ...]]:
        """Apply, re-run the case then the suite; (outcome, reason, broken ids). Reverted unless accepted."""
        undo = self.apply(checked)
        assert self.tx is not None
        try:
            if case_id is not None:
                case = next(c for c in self.suite.cases if c.id == case_id)
                one = self._run([case])[case_id]
                if one.status != "passed":
                    self.tx.apply(undo)
                    return (
                        "still_failing",
                        f"after your edit the case is still {one.status}: {one.reason}",
                        (),
                    )
            results = self.full_run()
            broken = tuple(
                sorted(i for i in self.passed() if results.get(i) and results[i].status != "passed")
            )
            if case_id is not None and results[case_id].status != "passed":
                broken = (*broken, case_id)
            if broken:
                self.tx.apply(undo)
                detail = "; ".join(f"{i}: {results[i].status}: {results[i].reason[:200]}" for i in broken[:8])
                return "broke_others", f"the edit broke cases that passed before: {detail}", broken
        except BaseException:
            self.tx.apply(undo)
            raise
        self.latest = results
        return "accepted", "", ()

    def record(self, n: int, plan: Plan | None, reason: str, cached: bool) -> tuple[AttemptRecord, bool]:
        """Validate and try one plan; (record, accepted)."""
        dump = plan.model_dump(mode="json") if plan else None
        if plan is None:
            return AttemptRecord(n=n, outcome="bad_reply", reason=reason, cached=cached), False
        if plan.status == "perfect" or not plan.actions:
            why = "you proposed no change, but the case still fails"
            return AttemptRecord(n=n, outcome="no_change", reason=why, plan=dump, cached=cached), False
        checked, combined = self._with_held(check_plan(plan, self.kb))
        if not checked.ok:
            why = "the plan was refused, nothing was written: " + "; ".join(str(r) for r in checked.refusals)
            return AttemptRecord(n=n, outcome="refused", reason=why, plan=dump, cached=cached), False
        diff = unified_diff(checked.originals, checked.changes)
        if self.dry_run:
            record = AttemptRecord(
                n=n, outcome="dry_run", reason=DRY_RUN_REASON, plan=dump, diff=diff, cached=cached
            )
            return record, True
        record, accepted = self._tried(n, plan, checked, diff, dump, cached)
        if combined:
            record = record.model_copy(update={"reason": combined + (record.reason or "accepted")})
        return record, accepted

    def _with_held(self, checked: CheckedPlan) -> tuple[CheckedPlan, str]:
        """A plan the KB validator alone refused, tried with the one held from before (plan.combine_held); the
        note to put before the attempt's reason when they were tried together. Otherwise it is held itself."""
        if checked.ok or not checked.held:
            return checked, ""
        earlier, self.held = self.held, checked
        both = combine_held(self.kb, earlier, checked) if earlier else None
        if both is None or earlier is None:
            return checked, ""
        self.held = None
        return both, (
            f"tried together with the earlier plan for {', '.join(sorted(earlier.held))}, which the KB "
            "validator refused alone: "
        )

    def _tried(self, n: int, plan: Plan, checked: CheckedPlan, diff: str, dump: dict | None, cached: bool):
        outcome, reason, broken = self.verify(checked, self._case_id)
        if outcome == "accepted":
            self.issues.extend(plan.issues_found)
            self.improvements.extend(plan.improvements_made)
        record = AttemptRecord(
            n=n,
            outcome=outcome,
            reason=reason,
            plan=dump,
            diff=diff,
            broke=broken,
            cached=cached,
        )
        return record, outcome == "accepted"

    _case_id: str | None = None

    # -- one case --------------------------------------------------------------------------------------------
    def repair_case(self, result: CaseResult) -> CaseRepair:
        case = next((c for c in self.suite.cases if c.id == result.id), None)
        ctx = failure_context(result, case, self.kb, comparison=self.comparison)
        kb_files = self.kb.files()
        files = sorted(kb_files)
        shown = max((len(kb_files.get(e.file, "")) for e in ctx.excerpts), default=0)
        room = max(self.limits.plan_tokens, shown // 3 + 256)  # ~3 characters a token, and the plan around it
        feedback: list[str] = []
        attempts: list[AttemptRecord] = []
        self._case_id = result.id
        note = ""
        for n in range(1, self.limits.max_retries + 1):
            try:
                messages = case_messages(
                    ctx, globs=self.kb.globs, files=files, feedback=feedback, secrets=self.secrets
                )
                plan, reason, cached = self.ask(messages, purpose=f"repair:{result.id}:{n}", n=n, room=room)
            except Stop as stop:
                self.stopped, note = str(stop), str(stop)
                break
            record, done = self.record(n, plan, reason, cached)
            attempts.append(record)
            if done:
                break
            feedback.append(record.reason)
        after = self.latest[result.id].status if result.id in self.latest else result.status
        repaired = any(a.outcome == "accepted" for a in attempts)
        return CaseRepair(
            id=result.id,
            question=result.question,
            before=result.status,
            after=after,
            repaired=repaired,
            attempts=tuple(attempts),
            note=note,
        )

    # -- the critique pass -------------------------------------------------------------------------------------
    def critique(self, repaired: list[str]) -> list[CritiqueRecord]:
        out: list[CritiqueRecord] = []
        feedback: list[str] = []
        self._case_id = None
        for n in range(1, self.limits.max_critique + 1):
            messages = critique_messages(
                diff=self.kb_diff(),
                repaired=repaired,
                globs=self.kb.globs,
                feedback=feedback,
                secrets=self.secrets,
            )
            try:
                plan, reason, cached = self.ask(messages, purpose=f"repair:critique:{n}", n=n)
            except Stop as stop:
                self.stopped = str(stop)
                break
            if plan is not None and plan.status == "perfect" and not plan.actions:
                out.append(
                    CritiqueRecord(
                        n=n, status="perfect", outcome="no_change", plan=plan.model_dump(mode="json")
                    )
                )
                break
            record, accepted = self.record(n, plan, reason, cached)
            out.append(
                CritiqueRecord(
                    n=n,
                    status=plan.status if plan else "",
                    outcome=record.outcome,
                    reason=record.reason,
                    plan=record.plan,
                    diff=record.diff,
                )
            )
            if not accepted:
                feedback.append(record.reason)
        return out

    def kb_diff(self) -> str:
        current = {p: self.kb.read(p) for p in self.initial}
        return unified_diff(self.initial, current)

    def llm_stats(self) -> LLMStats:
        if self.client is None:
            return LLMStats(requests=self.requests)
        counters = usage_record(self.client).model_dump(exclude={"model"})
        return LLMStats(**counters, requests=self.requests)
