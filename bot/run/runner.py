"""run_suite(...) -> RunResult: agents answer, the database judges, results are saved as they come."""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bot.agents.base import AgentAdapter, Answer
from bot.base.errors import DatabaseError
from bot.base.git import git_sha
from bot.base.results import (
    EVALUATOR_VERSION,
    Attempt,
    CaseResult,
    Prediction,
    RunMeta,
    RunResult,
    Verdict,
    case_content_hash,
    summarize,
    write_run,
)
from bot.cases.model import Case, CompareOptions, Suite
from bot.db.provision import Server
from bot.db.scratch import scratch_factory
from bot.db.session import ConnectionLost, Session
from bot.db.templates import Database, working_databases
from bot.run.cache import AnswerCache, AnswerSource
from bot.run.evaluate import Evaluation, evaluate_case
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
    shard: str | None = None  # "I/N": recorded in meta; the caller selects the shard's cases
    agent_fingerprint: str = ""
    kb_fingerprint: str = ""
    answer_cache: AnswerCache | None = None
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


def _case_result(
    case: Case,
    answer: Answer,
    ev: Evaluation | None,
    *,
    agent_s: float,
    eval_s: float,
    answer_key: str | None,
) -> CaseResult:
    prediction = Prediction(
        sql=answer.sql,
        error=answer.error,
        error_class=answer.error_class,
        stderr=answer.stderr,
        used=answer.used,
        duration_s=round(answer.duration_s or agent_s, 6),
        alternative=ev.alternative if ev else None,
    )
    timings = {"agent_s": round(agent_s, 6), "eval_s": round(eval_s, 6)}
    base: dict[str, Any] = dict(
        id=case.id,
        category=case.category,
        tags=case.tags,
        db=case.db,
        question=case.question,
        prediction=prediction,
        timings=timings,
        source=case.source,
        answer_key=answer_key,
        case_hash=case_content_hash(case),
    )
    if ev is None:
        return CaseResult(
            status="errored", reason=f"agent: {answer.error}", error_class=answer.error_class, **base
        )
    return CaseResult(
        status=ev.status,
        verdicts=ev.verdicts,
        deciding_scorer=ev.deciding,
        reason=ev.reason,
        error_class=ev.error_class,
        **base,
    )


# Which outcome is worse, for ties between attempts.
_SEVERITY = {"passed": 0, "invalid": 1, "failed": 2, "errored": 3}


def combine_attempts(tries: list[CaseResult]) -> CaseResult:
    """K attempts -> one CaseResult: the majority status (a tie goes to the worse outcome), the details of
    the first attempt with that status, and every attempt in `attempts`."""
    counts = Counter(t.status for t in tries)
    status = max(counts, key=lambda s: (counts[s], _SEVERITY[s]))
    chosen = next(t for t in tries if t.status == status)
    attempts = tuple(
        Attempt(status=t.status, sql=t.prediction.sql, reason=t.reason, error_class=t.error_class)
        for t in tries
    )
    return chosen.model_copy(update={"attempts": attempts})


def _combine_alternatives(evs: list[Evaluation]) -> Evaluation:
    """`gold:all`: every alternative must pass; the first that does not is the reason."""
    for i, ev in enumerate(evs):
        if ev.status != "passed":
            return Evaluation(
                status=ev.status,
                verdicts=ev.verdicts,
                deciding=ev.deciding,
                reason=f"gold alternative #{i + 1}: {ev.reason}",
                error_class=ev.error_class,
                alternative=i,
            )
    return evs[0]


def _evaluate(
    case: Case,
    answer: Answer,
    session: Session,
    options: CompareOptions,
    scratch,
    opts: RunOptions,
    schemas: dict,
) -> Evaluation:
    sqls = answer.alternatives or (answer.sql or "",)
    try:
        evs = [evaluate_case(case, s, session, options=options, scratch=scratch) for s in sqls]
    except ConnectionLost:
        session.reset()  # one retry on a fresh connection, then the run stops
        evs = [evaluate_case(case, s, session, options=options, scratch=scratch) for s in sqls]
    ev = _combine_alternatives(evs) if len(evs) > 1 else evs[0]
    if ev.status == "failed" or (opts.structural and ev.status == "passed"):
        sv = _structural(case, answer.sql, session, schemas)
        if sv is not None:
            ev = Evaluation(
                status=ev.status,
                verdicts={**ev.verdicts, "structural": sv},
                deciding=ev.deciding,
                reason=ev.reason,
                error_class=ev.error_class,
                alternative=ev.alternative,
            )
    if opts.judge is not None and ev.status == "failed" and answer.sql and case.gold_sql:
        jv = opts.judge(case, answer.sql)
        ev = Evaluation(
            status=ev.status,
            verdicts={**ev.verdicts, "llm_judge": jv},
            deciding=ev.deciding,
            reason=ev.reason,
            error_class=ev.error_class,
            alternative=ev.alternative,
        )
    return ev


def _structural(case: Case, sql: str | None, session: Session, cache: dict) -> Verdict | None:
    if not sql or not case.gold_sql:
        return None
    try:
        from bot.scoring.structural import structural_verdict
    except ImportError:  # pragma: no cover - the scorer ships with the package
        return None
    if case.db not in cache:
        try:
            cache[case.db] = session.schema()
        except Exception:  # noqa: BLE001 - a diagnostic must never fail a run
            cache[case.db] = None
    return structural_verdict(case.gold_sql[0], sql, schema=cache[case.db])


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
            sandbox=opts.sandbox,
        )
        return RunResult(meta=meta, summary=summarize(done), cases=tuple(done))

    saver = _Saver(opts.out, make)
    with working_databases(server, used_dbs) as dbs:
        fingerprints.update({k: v.fingerprint for k, v in dbs.items()})
        workers = _Workers(dbs, timeout_ms=timeout_ms, row_cap=row_cap)
        scratch = scratch_factory(server, dbs, timeout_ms=timeout_ms, row_cap=row_cap)
        schemas: dict[str, object] = {}

        def judge(case: Case, answer: Answer) -> Evaluation | None:
            if answer.sql is None:
                return None
            try:
                return _evaluate(
                    case, answer, workers.session(case.db), options[case.id], scratch, opts, schemas
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
            return _case_result(
                case, answer, ev, agent_s=agent_s, eval_s=time.perf_counter() - e0, answer_key=key
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
