"""A warm pull-request check against a warm run of its head (issue 26: at most 1.5x), in one run.

The shop example in a repository of its own, `main` and a branch with a planted regression checked out
(`trust_overhead.pr_repo`), one cache folder for the whole script and the embedded PostgreSQL kept running:
- warm-up: `sqlcanary check benchmarks/shop --base main` once (the base run, the head's answers and its run are
  cached, the templates built) and `sqlcanary run benchmarks/shop` once (its answers cached);
- --rounds rounds, each running the check and the run alternately.
Prints each one's median wall time and the ratio check / run. The check must still find the planted regression
(exit 1) every time. With --before REF, the check of commit REF is timed too, from a temporary worktree.

Usage:
    python benchmarks/perf/warm_check.py [--rounds 5] [--before REF]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trust_overhead import BOOT, REPO, git, pr_repo


def timed(code_root: Path, repo: Path, cache: Path, *args: str, expect: tuple[int, ...]) -> float:
    env = {**os.environ, "SQLCANARY_CACHE_DIR": str(cache)}
    env.pop("SQLCANARY_ANSWER_CACHE", None)
    argv = [sys.executable, "-c", BOOT.format(root=str(code_root)), *args, "-q"]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in expect:
        sys.exit(f"{' '.join(args)}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", help="also time the warm check of this commit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqlcanary-warmcheck-") as tmp:
        root = Path(tmp)
        repo = pr_repo(root)
        check = ("check", "benchmarks/shop", "--base", "main", "--out", str(root / "check"))
        run = ("run", "benchmarks/shop", "--out", str(root / "run.json"))
        sides: dict[str, tuple[Path, tuple[str, ...], tuple[int, ...]]] = {
            "check": (REPO, check, (1,)),
            "run of the head": (REPO, run, (0, 1)),
        }
        before = root / "before"
        if args.before:
            git(REPO, "worktree", "add", "--detach", "-q", str(before), args.before)
            sides[f"check ({args.before})"] = (before, check, (1,))
        try:
            for code, argv, expect in sides.values():  # warm-up: every cache filled
                cache = root / ("cache-before" if code == before else "cache")
                timed(code, repo, cache, *argv, expect=expect)
            times: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, (code, argv, expect) in sides.items():
                    cache = root / ("cache-before" if code == before else "cache")
                    times[name].append(timed(code, repo, cache, *argv, expect=expect))
        finally:
            if args.before:
                git(REPO, "worktree", "remove", "--force", str(before))
    med = {name: statistics.median(t) for name, t in times.items()}
    who = "root: the agent runs sandboxed" if os.geteuid() == 0 else "not root: no sandbox"
    print(f"shop with wrong_synonym planted, every cache warm ({who}); median of {args.rounds}:")
    for name, t in times.items():
        print(f"  {name:<22} {med[name]:6.2f} s   ({', '.join(f'{x:.2f}' for x in t)})")
    print(f"  check / run of the head {med['check'] / med['run of the head']:6.2f}x   (aim: at most 1.5x)")
    if args.before:
        name = f"check ({args.before})"
        print(f"  check / {name:<15} {med['check'] / med[name]:6.2f}")


if __name__ == "__main__":
    main()
