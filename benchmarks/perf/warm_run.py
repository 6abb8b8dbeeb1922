"""A warm `sqlcanary run` of defog against a bare harness process, in the same run (issue 26).

    python benchmarks/perf/warm_run.py [--shared ../shared] [--dsn DSN] [--rounds 5] [--before REF]

The defog suite (419 cases, 11 databases) is imported once; a first run of each side loads its templates and
working copies. Then, alternately and pair by pair, each of these whole processes runs every case:
- bare: a Python process with psycopg2 only, one connection per database, the gold then the prediction (the gold
  again) executed and their rows compared as multisets: the floor any harness pays;
- after: `sqlcanary run SUITE --agent gold --dsn DSN -q` of this tree;
- before (with --before REF): the same, by the sqlcanary of commit REF (a temporary git worktree).
Prints each one's median wall time, and the ratios to the bare harness (aim: at most 3x) and to `before`. The
answer cache is off (the gold agent is not cached anyway), so every case is executed and judged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from defog_data import SHARED, defog_source  # noqa: E402 - beside this script

from bot.base.settings import Settings  # noqa: E402
from bot.cases.importers import import_defog  # noqa: E402
from bot.cases.loader import load_suite  # noqa: E402
from bot.db.provision import provision  # noqa: E402
from bot.db.templates import working_databases  # noqa: E402

BOOT = "import sys; sys.path.insert(0, {root!r}); from bot.cli import main; sys.exit(main(sys.argv[1:]))"
BARE = """
import collections, json, sys, psycopg2
cases, dsns = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
conns = {db: psycopg2.connect(dsn) for db, dsn in dsns.items()}
for c in conns.values():
    c.autocommit = True
same = 0
for case in cases:
    with conns[case["db"]].cursor() as cur:
        cur.execute(case["sql"])
        gold = collections.Counter(map(repr, cur.fetchall()))
        cur.execute(case["sql"])
        same += gold == collections.Counter(map(repr, cur.fetchall()))
print(same)
"""


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: some defog golds fail on their own data; still a whole run
        sys.exit(f"{argv[:4]}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=SHARED)
    ap.add_argument("--dsn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", help="a commit whose sqlcanary to time as well")
    args = ap.parse_args()
    src = defog_source(args.shared)
    if src is None:
        return 2
    settings = Settings.from_environ(os.environ)
    server = provision(dsn=args.dsn, cache_dir=settings.embedded_dir)
    env = {**os.environ, "SQLCANARY_ANSWER_CACHE": "off"}
    with tempfile.TemporaryDirectory(prefix="sqlcanary-warm-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        import_defog(src, root / "defog")
        suite = load_suite(root / "defog")
        cases = [{"db": c.db, "sql": c.gold_sql[0]} for c in suite.cases]
        (root / "cases.json").write_text(json.dumps(cases))
        with working_databases(
            server, {db: suite.fixtures(db) for db in suite.databases}
        ) as dbs:  # the bare harness's own copies, for the run
            (root / "dsns.json").write_text(json.dumps({k: v.dsn for k, v in dbs.items()}))
            runs = {"bare": [sys.executable, "-c", BARE, str(root / "cases.json"), str(root / "dsns.json")]}
            trees = {"after": REPO}
            if args.before:
                subprocess.run(
                    ["git", "worktree", "add", "--detach", "-q", str(root / "before"), args.before],
                    cwd=REPO,
                    check=True,
                    capture_output=True,
                )
                trees["before"] = root / "before"
            for name, code in trees.items():
                out = root / f"{name}.json"
                runs[name] = [
                    sys.executable,
                    "-c",
                    BOOT.format(root=str(code)),
                    "run",
                    str(root / "defog"),
                    "--agent",
                    "gold",
                    "--dsn",
                    server.admin_dsn,
                    "--out",
                    str(out),
                    "-q",
                ]
            try:
                for argv in runs.values():
                    timed(argv, env)  # warm: templates and copies made, files cached
                times: dict[str, list[float]] = {name: [] for name in runs}
                for _ in range(args.rounds):
                    for name, argv in runs.items():
                        times[name].append(timed(argv, env))
            finally:
                if args.before:
                    subprocess.run(
                        ["git", "worktree", "remove", "--force", str(root / "before")],
                        cwd=REPO,
                        capture_output=True,
                    )
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"warm defog run, {len(cases)} cases, median of {args.rounds} (whole processes):")
    for name, value in med.items():
        each = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"  {name:<8} {value:7.2f} s   x bare {value / med['bare']:5.1f}   ({each})")
    if "before" in med:
        print(f"  after / before  {med['after'] / med['before']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
