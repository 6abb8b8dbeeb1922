"""The repair as a typed request, as `run_check` is for the check: what to repair and within which limits
(`RepairRequest`); `run_repair(req, settings)`, which provisions PostgreSQL and builds the LLM client (none when
the suite is only evaluated); and `repair(req, ...)`, the loop (bot.repair.loop.RepairLoop) over the failing
cases inside one KB transaction. `sqlcanary repair` and the Action's repair pull request call `run_repair`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bot.agents.base import AgentAdapter
from bot.base.results import RunResult
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.compare.comparison import Comparison
from bot.config.model import Config
from bot.db.provision import Mode, Server
from bot.kb.files import KBFiles
from bot.llm.protocol import JsonLLM
from bot.repair.loop import RepairLoop
from bot.repair.outcome import CaseRepair, RepairOutcome
from bot.repair.select import choose, group_failures
from bot.repair.setup import Limits, cap_budget, default_agent_factory, make_client
from bot.repair.summary import baseline_of, build_outcome
from bot.repair.transaction import Transaction, recover
from bot.run.runner import RunOptions
from bot.run.server import provision_server
from bot.run.setup import default_run_options


@dataclass(frozen=True)
class RepairRequest:
    """Repair the failing cases of `run` (a run of `suite` under `config`)."""

    run: RunResult
    config: Config
    suite: Suite
    limits: Limits = Limits()
    dry_run: bool = False  # plans are shown and verified, never kept
    evaluate_only: bool = False  # no LLM: the suite is evaluated and reported
    base_pass_rate: float | None = None  # the base commit's, for the report's base → head → repaired
    comparison: Comparison | None = None  # a check's: the cause links and diffs for the prompts
    only: tuple[str, ...] | None = None  # repair these failing cases only (a pull request's regressions)
    dsn: str | None = field(default=None, repr=False)  # --dsn; else DATABASE_URL, the config's, embedded
    postgres: Mode | None = None


def run_repair(req: RepairRequest, settings: Settings, *, client: JsonLLM | None = None) -> RepairOutcome:
    """Provision PostgreSQL, build the client from the config's `llm:` (capped at `limits.max_llm_calls`)
    unless one is given or the suite is only evaluated, and run the loop."""
    server = provision_server(req.dsn, req.config, settings, req.postgres)
    if client is None and not req.evaluate_only:
        client = make_client(req.config, max_calls=req.limits.max_llm_calls, settings=settings)
    return repair(req, server=server, client=None if req.evaluate_only else client, settings=settings)


def repair(
    req: RepairRequest,
    *,
    server: Server,
    client: JsonLLM | None,
    settings: Settings | None = None,
    agent_factory: Callable[[], AgentAdapter] | None = None,
    run_options: RunOptions | None = None,
) -> RepairOutcome:
    """The loop over `req`'s failing cases (all of them, or `req.only`), inside one KB transaction; with
    `req.evaluate_only`, the suite evaluated and reported, nothing asked."""
    config, run, suite, limits = req.config, req.run, req.suite, req.limits
    kb = KBFiles.from_config(config)
    cap_budget(client, limits.max_llm_calls)
    recover(kb)  # a repair killed earlier: put its files back first
    loop = RepairLoop(
        run=run,
        suite=suite,
        server=server,
        client=client,
        kb=kb,
        tx=None,
        limits=limits,
        agent_factory=agent_factory or default_agent_factory(config, settings, suite),
        opts=run_options or default_run_options(config),
        dry_run=req.dry_run,
        secrets=settings.secrets if settings else (),
        comparison=req.comparison,
        config_max_calls=config.llm.budget.max_calls,
    )
    if req.evaluate_only:
        loop.baseline = baseline_of(loop)
        loop.latest = loop.full_run()
        return build_outcome(loop, [], [], [], base_pass_rate=req.base_pass_rate, evaluated_only=True)
    with Transaction(kb) as tx:
        loop.tx = tx
        loop.latest = loop.baseline = baseline_of(loop)
        cases, skipped = _repair_cases(loop, req)
        repaired = [c.id for c in cases if c.repaired and c.attempts]
        critique = loop.critique(repaired) if repaired and not req.dry_run and not loop.stopped else []
        outcome = build_outcome(loop, cases, skipped, critique, base_pass_rate=req.base_pass_rate)
        tx.commit()
    return outcome


def _repair_cases(loop: RepairLoop, req: RepairRequest) -> tuple[list[CaseRepair], list[str]]:
    """Each chosen failing case repaired in turn (one an earlier edit fixed is recorded as such), and the ids
    left for later (over `max_failures`, or after the loop stopped)."""
    known = {c.id for c in req.suite.cases}
    failing = [c for c in req.run.cases if c.status == "failed" and c.id in known]
    if req.only is not None:  # a pull request's repair: its regressions, not what already failed on the base
        failing = [c for c in failing if c.id in req.only]
    passing = [c for c in loop.baseline.values() if c.status == "passed"]
    groups = group_failures(failing, passing, comparison=req.comparison)
    chosen, skipped = choose(groups, req.limits.max_failures)
    cases: list[CaseRepair] = []
    for result, cause in chosen:
        if loop.stopped:
            skipped.append(result.id)
            continue
        if loop.latest.get(result.id) and loop.latest[result.id].status == "passed" and not req.dry_run:
            cases.append(
                CaseRepair(
                    id=result.id,
                    question=result.question,
                    before=result.status,
                    after="passed",
                    repaired=True,
                    note="fixed by an earlier edit",
                    group=cause,
                )
            )
            continue
        cases.append(loop.repair_case(result).model_copy(update={"group": cause}))
    return cases, skipped
