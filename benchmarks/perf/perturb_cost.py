"""What `--perturb K` costs (issue 18): the defog suite with the gold agent at --perturb 0 and --perturb K, one run.

    python benchmarks/perf/perturb_cost.py [--suite DIR | --shared ../shared] [--dsn DSN] [--k 3] [--rounds 3]

Imports defog from --shared (unless --suite names a suite), starts one PostgreSQL (--dsn, else a private embedded
one in a fresh cache folder, so nothing built by an earlier run is reused) held for the whole script, then runs
`sqlcanary run SUITE --agent gold` in a process of its own each time:
- warm-up: once at --perturb 0 (templates loaded), then once at --perturb K, which builds the perturbed copies
  (cached like templates): its wall time, and its excess over the median at K, are the one-off build cost,
  printed apart and left out of the medians;
- --rounds rounds, each running --perturb 0 and --perturb K alternately.
Prints each side's median wall time, the ratio K / 0, and each side's counts (the aims: every case passed at
--perturb 3, 419 on defog, at most 4x the time of --perturb 0 for issue 18, 1.5x for issue 26). No threshold is
asserted: read the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bot.base.results import RunResult, read_run  # noqa: E402
from bot.base.settings import ENV_CACHE_DIR, Settings  # noqa: E402
from bot.cases.importers import import_defog  # noqa: E402
from bot.db.provision import provision  # noqa: E402


def has_perturb_flag() -> bool:
    helptext = subprocess.run(
        [sys.executable, "-m", "bot", "run", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return "--perturb" in helptext


def run_once(suite: Path, dsn: str, k: int, out: Path, env: dict[str, str]) -> tuple[float, RunResult]:
    argv = [sys.executable, "-m", "bot", "run", str(suite), "--agent", "gold", "--dsn", dsn]
    argv += ["--perturb", str(k), "--no-answer-cache", "--out", str(out), "-q"]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # 1: some case did not pass (counted below); 2: the run itself failed
        sys.exit(f"--perturb {k}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return took, read_run(out)


def counts(run: RunResult) -> str:
    s = run.summary
    coincidental = sum(c.error_class == "coincidental" for c in run.cases)
    return (
        f"{s.passed}/{s.total} passed, {s.failed} failed ({coincidental} coincidental), "
        f"{s.invalid} invalid, {s.errored} errored"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", help="a suite folder (default: defog, imported from --shared)")
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--dsn")
    ap.add_argument("--k", type=int, default=3, help="perturbed copies per database (default 3)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not has_perturb_flag():
        print("this sqlcanary has no `run --perturb` yet: nothing to measure", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sqlcanary-perturb-") as tmp:
        root = Path(tmp)
        suite = Path(args.suite) if args.suite else root / "defog"
        if not args.suite:
            src = Path(args.shared) / "datasets/defog"
            if not src.is_dir():
                print(f"no defog dataset at {src}", file=sys.stderr)
                return 2
            import_defog(src, suite)
        # A private cache (no copies or rankings from earlier runs: the one-off cost is the whole of it) and,
        # without --dsn, a private embedded server held by this process for the whole script (no server start in
        # the timings).
        env = {**os.environ, ENV_CACHE_DIR: str(root / "cache")}
        server = provision(dsn=args.dsn, cache_dir=Settings.from_environ(env).embedded_dir)
        dsn = server.admin_dsn
        run_once(suite, dsn, 0, root / "warm-0.json", env)
        build, _ = run_once(suite, dsn, args.k, root / "warm-k.json", env)
        times: dict[int, list[float]] = {0: [], args.k: []}
        last: dict[int, RunResult] = {}
        for i in range(args.rounds):
            for k in (0, args.k):
                took, last[k] = run_once(suite, dsn, k, root / f"run-{k}-{i}.json", env)
                times[k].append(took)
    med = {k: statistics.median(t) for k, t in times.items()}
    print(f"{suite.name}: sqlcanary run --agent gold, PostgreSQL {server.version} ({server.kind})")
    print(f"median of {args.rounds} rounds, --perturb 0 and --perturb {args.k} alternately:")
    for k in (0, args.k):
        each = ", ".join(f"{t:.1f}" for t in times[k])
        print(f"  --perturb {k:<2} {med[k]:7.1f} s   ({each})   {counts(last[k])}")
    aims = "issue 18 at most 4x, issue 26 at most 1.5x; every case passed"
    print(f"  ratio {args.k} / 0  {med[args.k] / med[0]:7.2f}x   (aims: {aims})")
    print(
        f"one-off: the first --perturb {args.k} run (builds the copies) took {build:.1f} s, "
        f"{build - med[args.k]:+.1f} s over its median"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
