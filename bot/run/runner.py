"""run_suite(...) -> RunResult: agents answer, the database judges, results are saved as they come."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bot.agents.base import AgentAdapter
from bot.base.errors import DatabaseError
from bot.base.git import git_sha
from bot.base.results import (
    EVALUATOR_VERSION,
    CaseResult,
    RunMeta,
    RunResult,
    summarize,
    write_run,
)
from bot.base.version import sqlcanary_version
from bot.cases.model import Case, CompareOptions, Suite
from bot.db.provision import Server
from bot.db.session import ConnectionLost
from bot.db.templates import working_databases
from bot.run.cache import AnswerCache, AnswerSource
from bot.run.case_judge import JudgeFn
from bot.run.case_results import case_result, combine_attempts, judge_hash
from bot.run.fixture_apart import load_apart
from bot.run.judging import Judge
from bot.run.perturb_setup import copies_wanted, perturbed_copies
from bot.run.query_cost import CostMemo
from bot.scoring.execution import resolve_options

SAVE_EVERY_S = 5.0
Progress = Callable[[CaseResult, int, int], None]


@dataclass(frozen=True)
class RunOptions:
    jobs: int = 2
    preset: str | None = None
    statement_timeout_ms: int | None = None
    row_cap: int | None = None
    structural: bool = False
    # `--llm-judge`: an LLM's opinion on structural equivalence for failing cases (a diagnostic, never deciding).
    judge: JudgeFn | None = None
    out: Path | None = None
    filters: dict = field(default_factory=dict)
    repeats: int = 1  # `--repeat K`: answers per case
    perturb: int | None = None  # `--perturb K` (a case's own `perturb` wins; bot/run/perturbed.py)
    perturb_rankings: Path | None = None  # where each gold's ranking of its perturbed copies is kept
    query_costs: Path | None = None  # where the planner's estimates are kept (bot/run/query_cost.py)
    shard: str | None = None  # "I/N": recorded in meta; the caller selects the shard's cases
    agent_fingerprint: str = ""
    kb_fingerprint: str = ""
    answer_cache: AnswerCache | None = None
    # What the agent fingerprint keying the answer cache covers (bot.run.setup.cache_basis; meta.cache_basis).
    cache_basis: str | None = None
    sandbox: str | None = None  # the agent's isolation, recorded as meta.sandbox (bot.agents.sandbox)


class _Saver:
    def __init__(self, out: Path | None, make: Callable[[bool], RunResult]) -> None:
        self.out, self.make, self.last = out, make, time.monotonic()
        self.lock = threading.Lock()

    def maybe(self) -> None:
        if self.out and time.monotonic() - self.last > SAVE_EVERY_S and self.lock.acquire(blocking=False):
            try:
                write_run(self.out, self.make(False))
                self.last = time.monotonic()
            finally:
                self.lock.release()


class _SuiteRun:
    """One run's state: the options each case is judged by, the results as they come, and the RunResult they
    make at any moment (saved every SAVE_EVERY_S, and when the run stops)."""

    def __init__(
        self, suite: Suite, cases: list[Case], agent: AgentAdapter, server: Server, opts: RunOptions
    ):
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.t0 = time.perf_counter()
        self.suite, self.cases, self.agent, self.server, self.opts = suite, cases, agent, server, opts
        self.timeout_ms = opts.statement_timeout_ms or suite.settings.statement_timeout_ms
        self.row_cap = opts.row_cap or suite.settings.row_cap
        preset_layer = CompareOptions(preset=opts.preset) if opts.preset else None
        self.options = {c.id: resolve_options(suite.settings.compare, c.compare, preset_layer) for c in cases}
        self.judged_by = {
            c.id: judge_hash(
                c, self.options[c.id], statement_timeout_ms=self.timeout_ms, row_cap=self.row_cap
            )
            for c in cases
        }
        self.wanted = copies_wanted(cases, opts.perturb)
        self.results: dict[int, CaseResult] = {}
        self.fingerprints: dict[str, str] = {}
        self.source = AnswerSource(agent, fingerprint=opts.agent_fingerprint, cache=opts.answer_cache)
        self.sha, self.version = git_sha(suite.root), sqlcanary_version()  # constant for the run
        self.saver = _Saver(opts.out, self.make)

    def make(self, complete: bool) -> RunResult:
        opts, done = self.opts, [self.results[i] for i in sorted(self.results)]
        meta = RunMeta(
            suite=self.suite.name,
            suite_hash=self.suite.content_hash,
            suite_path=str(self.suite.location),
            fixtures=dict(self.fingerprints),
            server_version=self.server.version,
            sqlcanary_version=self.version,
            evaluator_version=EVALUATOR_VERSION,
            preset=opts.preset or "sqlcanary",
            agent=self.agent.name,
            git_sha=self.sha,
            started_at=self.started_at,
            duration_s=round(time.perf_counter() - self.t0, 3),
            jobs=opts.jobs,
            filters=opts.filters,
            complete=complete,
            repeats=opts.repeats,
            shard=opts.shard,
            agent_fingerprint=opts.agent_fingerprint,
            kb_fingerprint=opts.kb_fingerprint,
            agent_calls=self.source.calls,
            cache_hits=self.source.hits,
            cache_basis=opts.cache_basis if opts.answer_cache is not None else None,
            sandbox=opts.sandbox,
            perturb=max(self.wanted.values(), default=0) or None,
        )
        return RunResult(meta=meta, summary=summarize(done), cases=tuple(done))

    def attempt(self, case: Case, k: int, memo: dict, judge: Judge) -> CaseResult:
        a0 = time.perf_counter()
        answer, key = self.source.answer(case, k)
        agent_s = time.perf_counter() - a0
        e0 = time.perf_counter()
        same = (answer.sql, answer.alternatives)  # attempts with the same SQL are judged once
        ev = memo[same] if same in memo else memo.setdefault(same, judge(case, answer, self.options[case.id]))
        return case_result(
            case,
            answer,
            ev,
            agent_s=agent_s,
            eval_s=time.perf_counter() - e0,
            answer_key=key,
            judged_by=self.judged_by[case.id],
        )

    def one(self, index: int, case: Case, judge: Judge, progress: Progress | None) -> None:
        memo: dict = {}
        tries = [self.attempt(case, k, memo, judge) for k in range(self.opts.repeats)]
        result = tries[0] if len(tries) == 1 else combine_attempts(tries)
        self.results[index] = result
        if progress:
            progress(result, len(self.results), len(self.cases))
        self.saver.maybe()


def run_suite(
    suite: Suite,
    cases: list[Case],
    agent: AgentAdapter,
    server: Server,
    opts: RunOptions,
    *,
    progress: Progress | None = None,
) -> RunResult:
    run = _SuiteRun(suite, cases, agent, server, opts)
    costs = CostMemo(opts.query_costs)
    used_dbs = {c.db: suite.fixtures(c.db) for c in cases}
    with (
        working_databases(server, used_dbs, load=load_apart) as dbs,
        perturbed_copies(
            server,
            suite,
            dbs,
            run.wanted,
            timeout_ms=run.timeout_ms,
            row_cap=run.row_cap,
            rankings=opts.perturb_rankings,
            workers=opts.jobs,
        ) as copies,
    ):
        run.fingerprints.update({k: v.fingerprint for k, v in dbs.items()})
        judge = Judge(
            server,
            dbs,
            copies,
            timeout_ms=run.timeout_ms,
            row_cap=run.row_cap,
            structural=opts.structural,
            llm_judge=opts.judge,
            perturb=opts.perturb,
            costs=costs,
        )
        try:
            _each(cases, opts.jobs, lambda i, case: run.one(i, case, judge, progress))
        except (BaseException, ConnectionLost) as exc:
            if opts.out:
                write_run(opts.out, run.make(False))
            if isinstance(exc, ConnectionLost):
                raise DatabaseError(
                    f"{exc.message}; {len(run.results)} case result(s) kept in {opts.out}"
                ) from exc
            raise
        finally:
            judge.workers.close()
            agent.close()
            costs.save()
    result = run.make(True)
    if opts.out:
        write_run(opts.out, result)
    return result


def _each(cases: list[Case], jobs: int, one: Callable[[int, Case], None]) -> None:
    """`one(i, case)` for every case: in order, or on `jobs` threads (the first error cancels what has not
    started, and is raised)."""
    if jobs <= 1:
        for i, case in enumerate(cases):
            one(i, case)
        return
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="sqlcanary") as pool:
        futures = [pool.submit(one, i, c) for i, c in enumerate(cases)]
        try:
            for f in futures:
                f.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise
