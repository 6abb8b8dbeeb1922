"""Judging an answer on a run's working databases: each worker thread its own session per database, a scratch
database for what cannot run in a transaction, and a bug in one case kept to that case."""

from __future__ import annotations

import sys
import threading
import traceback

from bot.agents.base import Answer
from bot.cases.model import Case, CompareOptions
from bot.db.provision import Server
from bot.db.scratch import scratch_factory
from bot.db.session import ConnectionLost, Session
from bot.db.templates import Database
from bot.run.case_judge import JudgeFn, JudgeTools, judge_answer
from bot.run.evaluation import Evaluation
from bot.run.perturbed import Copies
from bot.run.query_cost import CostMemo


class Workers:
    """Per-thread sessions to each working database (each with the run's memo of query costs on its template)."""

    def __init__(
        self, dbs: dict[str, Database], *, timeout_ms: int, row_cap: int, costs: CostMemo | None = None
    ) -> None:
        self.dbs = dbs
        self.costs = costs
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
            database = self.dbs[db]
            plans = self.costs.on(database.template) if self.costs is not None else None
            s = Session(database.dsn, statement_timeout_ms=self.timeout_ms, row_cap=self.row_cap, plans=plans)
            sessions[db] = s
            with self._lock:
                self._all.append(s)
        return sessions[db]

    def close(self) -> None:
        for s in self._all:
            s.close()


class Judge:
    """Judges an answer on the working databases, with each thread's own sessions; a bug in one case is that
    case's internal error, never the run's."""

    def __init__(
        self,
        server: Server,
        dbs: dict[str, Database],
        copies: Copies | None,
        *,
        timeout_ms: int,
        row_cap: int,
        structural: bool,
        llm_judge: JudgeFn | None,
        perturb: int | None,
        costs: CostMemo | None = None,
    ) -> None:
        self.perturb = perturb
        self.workers = Workers(dbs, timeout_ms=timeout_ms, row_cap=row_cap, costs=costs)
        scratch = scratch_factory(server, dbs, timeout_ms=timeout_ms, row_cap=row_cap)
        self.tools = JudgeTools(scratch, structural=structural, llm_judge=llm_judge, copies=copies)

    def __call__(self, case: Case, answer: Answer, options: CompareOptions) -> Evaluation | None:
        if answer.sql is None:
            return None
        try:
            session = self.workers.session(case.db)
            return judge_answer(
                case, answer, session, options, self.tools, perturb=case.perturb_copies(self.perturb)
            )
        except ConnectionLost:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in one case must not lose the others
            detail = traceback.format_exc(limit=-3)
            print(f"sqlcanary: internal error on case {case.id}:\n{detail}", file=sys.stderr)
            self.workers.session(case.db).reset()  # whatever state the bug left the connection in
            return Evaluation(
                status="errored",
                verdicts={},
                deciding=None,
                error_class="internal_error",
                reason=f"internal error (a bug in sqlcanary): {type(exc).__name__}: {exc}",
            )
