"""An audit of a suite: its cases loaded and selected as a run selects them, its fixtures in the run's working
databases on the run's server, and every query case's golds run in a read-only transaction (rolled back) through
the run's guarded sessions, where the detectors (bot/audit/detectors.py) probe them."""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bot.audit.agreement import answers_from_runs
from bot.audit.context import CaseAudit, Hint, read_schema
from bot.audit.detectors import DETECTORS
from bot.audit.literals import Schema
from bot.audit.model import KINDS, AuditReport, Suspect
from bot.base.errors import SqlcanaryError
from bot.base.settings import Settings
from bot.cases.model import Case, CompareOptions
from bot.cases.sqlparse import remembered
from bot.config.model import Config, find_config
from bot.db.provision import Mode
from bot.db.session import ConnectionLost, Session
from bot.db.templates import working_databases
from bot.run.fixture_apart import load_apart
from bot.run.judging import Workers
from bot.run.perturb_setup import copies_wanted, perturbed_copies
from bot.run.perturbed import Copies
from bot.run.query_cases import as_compared
from bot.run.request import RunRequest
from bot.run.server import provision_server
from bot.run.setup import default_run_options, suite_and_cases, suite_loader
from bot.scoring.execution import resolve_options

Say = Callable[[str], None]


@dataclass(frozen=True)
class AuditRequest:
    """What `sqlcanary audit` is asked: the suite and config as `run` takes them, the database, the selection,
    and the saved runs whose answers the agreement detector reads."""

    suite: str | None = None
    config: str | None = None
    dsn: str | None = None
    postgres: Mode | None = None
    tags: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    jobs: int | None = None
    perturb: int | None = None  # `--perturb K` (None: the config's `perturb`); 0: gold_fails_on_perturbed off
    llm: bool = False  # `--llm`: llm_hint
    suite_data: str | None = (
        None  # a check's head: its suite as the head's reader parsed it (bot.cases.suite_doc)
    )


class _Schemas:
    """Each database's columns, read once (by the first case that asks) through that case's session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, Schema] = {}

    def of(self, db: str, session: Session) -> Callable[[], Schema]:
        def read() -> Schema:
            with self._lock:
                if db not in self._known:
                    self._known[db] = read_schema(session)
                return self._known[db]

        return read


@dataclass(frozen=True)
class Extras:
    """What the optional detectors read: the perturbed copies and the case's K of them (`--perturb`), the LLM
    (`--llm`)."""

    copies: Copies | None = None
    on_copies: tuple[int, ...] = ()
    hint: Hint | None = None


def audit_case(
    case: Case,
    session: Session,
    options: CompareOptions,
    schema: Callable[[], Schema],
    answers: tuple[str, ...],
    extra: Extras | None = None,
) -> tuple[list[Suspect], int]:
    """The case's suspects, in KINDS order, and how many detectors hit a bug (said on stderr, never fatal)."""
    session.begin(read_only=True)
    bugs = 0
    found: list[Suspect] = []
    try:
        golds = [session.fetch(as_compared(g, options), savepoint=True) for g in case.gold_sql]
        more = extra or Extras()
        audit = CaseAudit(
            case=case,
            session=session,
            options=options,
            golds=golds,
            schema=schema,
            answers=answers,
            copies=more.copies,
            on_copies=more.on_copies,
            hint=more.hint,
        )
        for name, detect in DETECTORS:
            try:
                found.extend(detect(audit))
            except (ConnectionLost, SqlcanaryError):  # a lost database, an LLM that cannot answer: exit 2
                raise
            except Exception:  # noqa: BLE001 - a bug in one detector must not lose the others' findings
                bugs += 1
                detail = traceback.format_exc(limit=-3)
                print(
                    f"sqlcanary: internal error in audit {name} on case {case.id}:\n{detail}", file=sys.stderr
                )
                session.reset()
                session.begin(read_only=True)
                audit.golds = [session.fetch(as_compared(g, options), savepoint=True) for g in case.gold_sql]
    finally:
        session.rollback()
    return sorted(found, key=lambda s: KINDS.index(s.kind) if s.kind in KINDS else len(KINDS)), bugs


@dataclass(frozen=True)
class Audited:
    report: AuditReport
    bugs: int = 0  # detectors that hit an internal error (exit 3)


def audit_request(req: AuditRequest, settings: Settings, *, say: Say = lambda _: None) -> Audited:
    """Audit the suite `req` names: bad input (a suite, case or run file that cannot be read) stops it before any
    database is started."""
    config = find_config(req.config, req.suite, cwd=Path.cwd())
    selection = RunRequest(
        suite=req.suite, config=req.config, tags=req.tags, ids=req.ids, suite_data=req.suite_data
    )
    with remembered(settings.cache_dir / "sql-parse"):
        suite, cases = suite_and_cases(selection, config, load=suite_loader(selection))
    answers = answers_from_runs(req.runs)
    queries = [c for c in cases if c.category == "query"]
    run_opts = default_run_options(config)
    timeout_ms = run_opts.statement_timeout_ms or suite.settings.statement_timeout_ms
    row_cap = run_opts.row_cap or suite.settings.row_cap
    preset = CompareOptions(preset=config.preset) if config.preset else None
    options = {c.id: resolve_options(suite.settings.compare, c.compare, preset) for c in queries}
    found: dict[int, list[Suspect]] = {}
    bugs: dict[int, int] = {}
    hint = _hint(req, config, settings)
    k = req.perturb if req.perturb is not None else config.perturb
    wanted = copies_wanted([c for c in queries if len(c.gold_sql) > 1], k)  # only alternatives are compared
    if queries:
        server = provision_server(req.dsn, config, settings, req.postgres)
        say(
            f"sqlcanary: audit of suite {suite.name}: {len(queries)} query case(s), PostgreSQL {server.version}"
            + (f", {max(wanted.values())} perturbed copies per case" if wanted else "")
        )
        schemas = _Schemas()
        used = {c.db: suite.fixtures(c.db) for c in queries}
        jobs = req.jobs or run_opts.jobs
        with (
            working_databases(server, used, load=load_apart) as dbs,  # as a run loads them
            perturbed_copies(
                server,
                suite,
                dbs,
                wanted,
                timeout_ms=timeout_ms,
                row_cap=row_cap,
                rankings=settings.cache_dir / "perturb-rankings.json",  # the run's: each gold ranked once
                workers=jobs,
            ) as copies,
        ):
            workers = Workers(dbs, timeout_ms=timeout_ms, row_cap=row_cap)

            def one(i: int, case: Case) -> None:
                session = workers.session(case.db)
                extra = Extras(
                    copies=copies,
                    on_copies=_on_copies(copies, case, session, options[case.id], k),
                    hint=hint,
                )
                suspects, n = audit_case(
                    case,
                    session,
                    options[case.id],
                    schemas.of(case.db, session),
                    answers.get(case.id, ()),
                    extra,
                )
                found[i] = suspects
                bugs[i] = n

            try:  # a lost connection (ConnectionLost) is a DatabaseError: the command says so
                _each(queries, jobs, one)
            finally:
                workers.close()
    report = AuditReport(
        suite=suite.name,
        suspects=tuple(s for i in sorted(found) for s in found[i]),
        audited=len(queries),
        skipped=len(cases) - len(queries),
    )
    return Audited(report=report, bugs=sum(bugs.values()))


def _hint(req: AuditRequest, config: Config, settings: Settings) -> Hint | None:
    if not req.llm:
        return None
    from bot.audit.llm_hint import LLMHint

    return LLMHint(config, settings)


def _on_copies(
    copies: Copies | None, case: Case, real: Session, options: CompareOptions, k: int | None
) -> tuple[int, ...]:
    """The copies a run judges this case on: the first K of its first gold's ranking (bot.run.perturbed)."""
    n = case.perturb_copies(k)
    if copies is None or n <= 0 or len(case.gold_sql) < 2 or not copies.clones.count(case.db):
        return ()
    ranked = copies.ranking(case, as_compared(case.gold_sql[0], options), real, options)
    return tuple(i for i in ranked if i < copies.clones.count(case.db))[:n]


def _each(cases: list[Case], jobs: int, one: Callable[[int, Case], None]) -> None:
    if jobs <= 1:
        for i, case in enumerate(cases):
            one(i, case)
        return
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="sqlcanary-audit") as pool:
        for f in [pool.submit(one, i, c) for i, c in enumerate(cases)]:
            f.result()
