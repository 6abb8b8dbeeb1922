"""run_suite(...) -> RunResult: agents answer, the database judges, results are saved as they come."""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bot.agents.base import AgentAdapter, Answer
from bot.base.errors import DatabaseError
from bot.base.git import git_sha
from bot.base.results import (
    EVALUATOR_VERSION,
    CaseResult,
    RunMeta,
    RunResult,
    Verdict,
    summarize,
    write_run,
)
from bot.cases.model import Case, CompareOptions, Suite
from bot.db.provision import Server
from bot.db.scratch import scratch_factory
from bot.db.session import ConnectionLost, Session
from bot.db.templates import Database, working_databases
from bot.run.cache import AnswerCache, AnswerSource
from bot.run.case_judge import judge_answer
from bot.run.case_results import case_result, combine_attempts, judge_hash
from bot.run.evaluation import Evaluation
from bot.run.perturb_setup import copies_wanted, perturbed_copies
from bot.scoring.execution import resolve_options

SAVE_EVERY_S = 5.0


@dataclass(frozen=True)
class RunOptions:
    jobs: int = 2
    preset: str | None = None
    statement_timeout_ms: int | None = None
    row_cap: int | None = None
    structural: bool = False
    # `--llm-judge`: an LLM's opinion on structural equivalence for failing cases (a diagnostic, never deciding).
    judge: Callable[[Case, str], Verdict] | None = None
    out: Path | None = None
    filters: dict = field(default_factory=dict)
    repeats: int = 1  # `--repeat K`: answers per case
    perturb: int | None = None  # `--perturb K` (a case's own `perturb` wins; bot/run/perturbed.py)
    perturb_rankings: Path | None = None  # where each gold's ranking of its perturbed copies is kept
    shard: str | None = None  # "I/N": recorded in meta; the caller selects the shard's cases
    agent_fingerprint: str = ""
    kb_fingerprint: str = ""
    answer_cache: AnswerCache | None = None
    # What the agent fingerprint keying the answer cache covers (bot.run.setup.cache_basis; meta.cache_basis).
    cache_basis: str | None = None
    sandbox: str | None = None  # the agent's isolation, recorded as meta.sandbox (bot.agents.sandbox)


def sqlcanary_version() -> str:
    try:
        return version("sqlcanary")
    except PackageNotFoundError:
        return "0+unknown"


class _Workers:
    """Per-thread sessions to each working database."""

    def __init__(self, dbs: dict[str, Database], *, timeout_ms: int, row_cap: int) -> None:
        self.dbs = dbs
        self.timeout_ms = timeout_ms
        self.row_cap = row_cap
        self._local = threading.local()
        self._all: list[Session] = []
        self._lock = threading.Lock()

    def session(self, db: str) -> Session:
        sessions = getattr(self._local, "sessions", None)
        if sessions is None:
            sessions = self._local.sessions = {}
        if db not in sessions:
            s = Session(self.dbs[db].dsn, statement_timeout_ms=self.timeout_ms, row_cap=self.row_cap)
            sessions[db] = s
            with self._lock:
                self._all.append(s)
        return sessions[db]

    def close(self) -> None:
        for s in self._all:
            s.close()


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


def run_suite(
    suite: Suite,
    cases: list[Case],
    agent: AgentAdapter,
    server: Server,
    opts: RunOptions,
    *,
    progress: Callable[[CaseResult, int, int], None] | None = None,
) -> RunResult:
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    timeout_ms = opts.statement_timeout_ms or suite.settings.statement_timeout_ms
    row_cap = opts.row_cap or suite.settings.row_cap
    used_dbs = {c.db: suite.databases[c.db] for c in cases}
    preset_layer = CompareOptions(preset=opts.preset) if opts.preset else None
    options = {c.id: resolve_options(suite.settings.compare, c.compare, preset_layer) for c in cases}
    judged_by = {
        c.id: judge_hash(c, options[c.id], statement_timeout_ms=timeout_ms, row_cap=row_cap) for c in cases
    }
    results: dict[int, CaseResult] = {}
    fingerprints: dict[str, str] = {}
    source = AnswerSource(agent, fingerprint=opts.agent_fingerprint, cache=opts.answer_cache)
    sha, version = git_sha(suite.root), sqlcanary_version()  # constant for the run; make() runs at every save

    def make(complete: bool) -> RunResult:
        done = [results[i] for i in sorted(results)]
        meta = RunMeta(
            suite=suite.name,
            suite_hash=suite.content_hash,
            suite_path=str(suite.location),
            fixtures=dict(fingerprints),
            server_version=server.version,
            sqlcanary_version=version,
            evaluator_version=EVALUATOR_VERSION,
            preset=opts.preset or "sqlcanary",
            agent=agent.name,
            git_sha=sha,
            started_at=started_at,
            duration_s=round(time.perf_counter() - t0, 3),
            jobs=opts.jobs,
            filters=opts.filters,
            complete=complete,
            repeats=opts.repeats,
            shard=opts.shard,
            agent_fingerprint=opts.agent_fingerprint,
            kb_fingerprint=opts.kb_fingerprint,
            agent_calls=source.calls,
            cache_hits=source.hits,
            cache_basis=opts.cache_basis if opts.answer_cache is not None else None,
            sandbox=opts.sandbox,
            perturb=max(wanted.values(), default=0) or None,
        )
        return RunResult(meta=meta, summary=summarize(done), cases=tuple(done))

    saver = _Saver(opts.out, make)
    wanted = copies_wanted(cases, opts.perturb)
    with (
        working_databases(server, used_dbs) as dbs,
        perturbed_copies(
            server, suite, dbs, wanted, timeout_ms=timeout_ms, row_cap=row_cap, rankings=opts.perturb_rankings
        ) as copies,
    ):
        fingerprints.update({k: v.fingerprint for k, v in dbs.items()})
        workers = _Workers(dbs, timeout_ms=timeout_ms, row_cap=row_cap)
        scratch = scratch_factory(server, dbs, timeout_ms=timeout_ms, row_cap=row_cap)
        schemas: dict[str, object] = {}

        def judge(case: Case, answer: Answer) -> Evaluation | None:
            if answer.sql is None:
                return None
            try:
                return judge_answer(
                    case,
                    answer,
                    workers.session(case.db),
                    options[case.id],
                    scratch,
                    structural=opts.structural,
                    judge=opts.judge,
                    schemas=schemas,
                    copies=copies,
                    perturb=case.perturb_copies(opts.perturb),
                )
            except ConnectionLost:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug in one case must not lose the others
                detail = traceback.format_exc(limit=-3)
                print(f"sqlcanary: internal error on case {case.id}:\n{detail}", file=sys.stderr)
                workers.session(case.db).reset()  # whatever state the bug left the connection in
                return Evaluation(
                    status="errored",
                    verdicts={},
                    deciding=None,
                    error_class="internal_error",
                    reason=f"internal error (a bug in sqlcanary): {type(exc).__name__}: {exc}",
                )

        def attempt(case: Case, k: int, memo: dict) -> CaseResult:
            a0 = time.perf_counter()
            answer, key = source.answer(case, k)
            agent_s = time.perf_counter() - a0
            e0 = time.perf_counter()
            same = (answer.sql, answer.alternatives)  # attempts with the same SQL are judged once
            ev = memo[same] if same in memo else memo.setdefault(same, judge(case, answer))
            return case_result(
                case,
                answer,
                ev,
                agent_s=agent_s,
                eval_s=time.perf_counter() - e0,
                answer_key=key,
                judged_by=judged_by[case.id],
            )

        def one(index: int, case: Case) -> None:
            memo: dict = {}
            tries = [attempt(case, k, memo) for k in range(opts.repeats)]
            result = tries[0] if len(tries) == 1 else combine_attempts(tries)
            results[index] = result
            if progress:
                progress(result, len(results), len(cases))
            saver.maybe()

        try:
            if opts.jobs <= 1:
                for i, case in enumerate(cases):
                    one(i, case)
            else:
                with ThreadPoolExecutor(max_workers=opts.jobs, thread_name_prefix="sqlcanary") as pool:
                    futures = [pool.submit(one, i, c) for i, c in enumerate(cases)]
                    try:
                        for f in futures:
                            f.result()
                    except BaseException:
                        for f in futures:
                            f.cancel()
                        raise
        except (BaseException, ConnectionLost) as exc:
            if opts.out:
                write_run(opts.out, make(False))
            if isinstance(exc, ConnectionLost):
                raise DatabaseError(
                    f"{exc.message}; {len(results)} case result(s) kept in {opts.out}"
                ) from exc
            raise
        finally:
            workers.close()
            agent.close()
    run = make(True)
    if opts.out:
        write_run(opts.out, run)
    return run
