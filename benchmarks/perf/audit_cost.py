"""What `sqlcanary audit --perturb K` costs against `sqlcanary run --agent gold --perturb K` (issue 28), one run.

    python benchmarks/perf/audit_cost.py [--suite DIR | --shared ../shared] [--dsn DSN] [--k 3] [--rounds 3]

Imports defog from --shared (unless --suite names a suite), starts one PostgreSQL (--dsn, else a private embedded
one in a fresh cache folder) held for the whole script, warms up once each (templates loaded, perturbed copies
built and ranked: the audit reuses the run's), then runs, --rounds times, the run and the audit alternately, each
in a process of its own. Prints each side's median wall time, the ratio audit / run (the issue's bound: at most
2x) and how many suspects the audit found. No threshold is asserted: read the ratio.
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

from bot.base.settings import ENV_CACHE_DIR, Settings  # noqa: E402
from bot.cases.importers import import_defog  # noqa: E402
from bot.db.provision import provision  # noqa: E402


def timed(argv: list[str], env: dict[str, str], ok: tuple[int, ...]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)
    took = time.perf_counter() - started
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(argv[2:4])}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", help="a suite folder (default: defog, imported from --shared)")
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--dsn")
    ap.add_argument("--k", type=int, default=3, help="perturbed copies per database (default 3)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqlcanary-audit-cost-") as tmp:
        root = Path(tmp)
        suite = Path(args.suite) if args.suite else root / "defog"
        if not args.suite:
            src = Path(args.shared) / "datasets/defog"
            if not src.is_dir():
                print(f"no defog dataset at {src}", file=sys.stderr)
                return 2
            import_defog(src, suite)
        env = {**os.environ, ENV_CACHE_DIR: str(root / "cache")}
        server = provision(dsn=args.dsn, cache_dir=Settings.from_environ(env).embedded_dir)
        base = [sys.executable, "-m", "bot"]
        common = [str(suite), "--dsn", server.admin_dsn, "--perturb", str(args.k), "-q"]
        run = [*base, "run", *common, "--agent", "gold", "--no-answer-cache", "--out", str(root / "run.json")]
        report = root / "audit.json"
        audit = [*base, "audit", *common, "--format", "json", "--out", str(report)]
        timed(run, env, (0, 1))  # warm-up: templates, copies and their ranking
        timed(audit, env, (0,))
        times: dict[str, list[float]] = {"run": [], "audit": []}
        for _ in range(args.rounds):
            times["run"].append(timed(run, env, (0, 1)))
            times["audit"].append(timed(audit, env, (0,)))
        found = json.loads(report.read_text(encoding="utf-8"))
    med = {k: statistics.median(t) for k, t in times.items()}
    print(
        f"{suite.name}: --perturb {args.k}, PostgreSQL {server.version} ({server.kind}); median of {args.rounds}:"
    )
    print(f"  run --agent gold  {med['run']:7.2f} s   ({', '.join(f'{t:.2f}' for t in times['run'])})")
    print(f"  audit             {med['audit']:7.2f} s   ({', '.join(f'{t:.2f}' for t in times['audit'])})")
    print(f"  audit / run       {med['audit'] / med['run']:7.2f}x   (issue 28: at most 2x)")
    print(f"  the audit: {len(found['suspects'])} suspect(s) in {found['audited']} query case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
