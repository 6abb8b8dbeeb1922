"""Evaluation throughput on the defog suite with the gold agent, against two baselines measured in the same run.

    python benchmarks/perf/eval_throughput.py [--shared ../shared] [--dsn DSN] [--rounds 3]

Prints cases per second for:
  floor     gold and prediction executed back to back on one warm connection, no isolation, no comparison;
  sqlcanary evaluate_case: read-only repeatable-read transaction, restricted role, row cap, comparison, rollback,
            with 1 worker and with 2 (the default `--jobs 2`, one connection per worker);
  template  a BIRD-CRITIC-style harness: a database cloned from the template for every case;
and the time to compare two fetched 1,000,000-row results against the time to fetch them.
Targets (issue 2): sqlcanary >= 0.5x floor and >= 100x template; compare(1M) < fetch(1M).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import psycopg2

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from defog_data import SHARED, defog_source  # noqa: E402 - beside this script

from bot.base.settings import Settings  # noqa: E402
from bot.cases.importers import import_defog  # noqa: E402
from bot.cases.loader import load_suite  # noqa: E402
from bot.cases.model import Case  # noqa: E402
from bot.db.provision import provision  # noqa: E402
from bot.db.session import Session  # noqa: E402
from bot.db.templates import clone_database, drop_database, working_databases  # noqa: E402
from bot.run.evaluate import evaluate_case  # noqa: E402
from bot.scoring.execution import resolve_options  # noqa: E402
from bot.scoring.tables import TableOptions, compare_tables  # noqa: E402


def floor(cases: list[Case], dsns: dict[str, str]) -> float:
    conns = {db: psycopg2.connect(dsn) for db, dsn in dsns.items()}
    for c in conns.values():
        c.autocommit = True
    started = time.perf_counter()
    for case in cases:
        with conns[case.db].cursor() as cur:
            cur.execute(case.gold_sql[0])
            cur.fetchall()
            cur.execute(case.gold_sql[0])
            cur.fetchall()
    took = time.perf_counter() - started
    for c in conns.values():
        c.close()
    return len(cases) / took


def ours(cases: list[Case], dsns: dict[str, str], suite) -> float:
    sessions = {db: Session(dsn, statement_timeout_ms=30_000, row_cap=10_000) for db, dsn in dsns.items()}
    options = {c.id: resolve_options(suite.settings.compare, c.compare) for c in cases}
    started = time.perf_counter()
    for case in cases:
        ev = evaluate_case(case, case.gold_sql[0], sessions[case.db], options=options[case.id])
        assert ev.status == "passed", (case.id, ev.reason)
    took = time.perf_counter() - started
    for s in sessions.values():
        s.close()
    return len(cases) / took


def ours_parallel(cases: list[Case], dsns: dict[str, str], suite, jobs: int) -> float:
    """As `sqlcanary run --jobs N` evaluates: N workers, each with its own connections."""
    local = threading.local()
    made: list[Session] = []
    lock = threading.Lock()
    options = {c.id: resolve_options(suite.settings.compare, c.compare) for c in cases}

    def one(case: Case) -> None:
        sessions = getattr(local, "s", None)
        if sessions is None:
            sessions = local.s = {}
        if case.db not in sessions:
            sessions[case.db] = Session(dsns[case.db], statement_timeout_ms=30_000, row_cap=10_000)
            with lock:
                made.append(sessions[case.db])
        ev = evaluate_case(case, case.gold_sql[0], sessions[case.db], options=options[case.id])
        assert ev.status == "passed", (case.id, ev.reason)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, cases))  # connect outside the timed part
        started = time.perf_counter()
        list(pool.map(one, cases))
        took = time.perf_counter() - started
    for s in made:
        s.close()
    return len(cases) / took


def template_per_case(cases: list[Case], server, dbs) -> float:
    started = time.perf_counter()
    for i, case in enumerate(cases):
        name = f"sqlcanary_w_perf_{i}"
        clone_database(server, dbs[case.db].template, name)
        from psycopg2.extensions import make_dsn

        with closing(psycopg2.connect(make_dsn(server.admin_dsn, dbname=name))) as conn, conn.cursor() as cur:
            cur.execute(case.gold_sql[0])
            cur.fetchall()
            cur.execute(case.gold_sql[0])
            cur.fetchall()
        drop_database(server, name)
    return len(cases) / (time.perf_counter() - started)


def million_rows(dsn: str) -> tuple[float, float]:
    sql = (
        "SELECT i, i * 0.5 AS half, 'name ' || (i % 1000) AS label, DATE '2024-01-01' + (i % 365) AS d "
        "FROM generate_series(1, 1000000) i"
    )
    s = Session(dsn, statement_timeout_ms=120_000, row_cap=2_000_000)
    s.begin(read_only=True)
    t0 = time.perf_counter()
    a = s.fetch(sql).result
    b = s.fetch(sql + " ORDER BY i DESC").result
    fetch = time.perf_counter() - t0
    s.rollback()
    s.close()
    t1 = time.perf_counter()
    v = compare_tables(a, b, opts=TableOptions())
    compare = time.perf_counter() - t1
    assert v.match, v.message
    return fetch, compare


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=SHARED)
    ap.add_argument("--dsn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--template-cases", type=int, default=20)
    args = ap.parse_args()
    src = defog_source(args.shared)
    if src is None:
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        import_defog(src, Path(tmp) / "defog")
        suite = load_suite(Path(tmp) / "defog")
        cases = list(suite.cases)
        server = provision(dsn=args.dsn, cache_dir=Settings.from_environ(os.environ).embedded_dir)
        with working_databases(server, {db: suite.fixtures(db) for db in suite.databases}) as dbs:
            dsns = {k: v.dsn for k, v in dbs.items()}
            floor(cases, dsns), ours(cases, dsns, suite)  # warm caches
            f = statistics.median(floor(cases, dsns) for _ in range(args.rounds))
            o = statistics.median(ours(cases, dsns, suite) for _ in range(args.rounds))
            o2 = statistics.median(ours_parallel(cases, dsns, suite, 2) for _ in range(args.rounds))
            t = template_per_case(cases[: args.template_cases], server, dbs)
            fetch, compare = million_rows(next(iter(dsns.values())))
    print(f"defog suite: {len(cases)} cases, PostgreSQL {server.version} ({server.kind})")
    print(f"floor (no isolation):       {f:8.0f} cases/s")
    print(f"sqlcanary, 1 worker:        {o:8.0f} cases/s   {o / f:5.2f}x floor   {o / t:5.0f}x template")
    print(
        f"sqlcanary, 2 workers:       {o2:8.0f} cases/s   {o2 / f:5.2f}x floor   {o2 / t:5.0f}x template"
        "   (the default --jobs 2)"
    )
    print(f"template per case:          {t:8.1f} cases/s")
    print("targets: sqlcanary >= 0.5x floor and >= 100x template per case")
    print(
        f"1,000,000-row results:      fetch both {fetch:.2f}s, compare {compare:.2f}s   "
        f"compare/fetch {compare / fetch:.2f} (target < 1)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
