"""What the trust boundary (issue 14) costs a pull-request check, before and after, in one run.

`sqlcanary check` of the shop example with a planted regression (`wrong_synonym`), base and head both evaluated
(no base-run cache, no answer cache: every case asks the agent, the worst case for the sandbox), run alternately
by two versions of sqlcanary on the same embedded PostgreSQL:
- before: the commit given by --before (default: the last commit without the trust boundary), from a temporary
  git worktree of this repository, imported ahead of the installed package;
- after: this working tree.
As root (in the Action's container, and in CI), the after side runs the shop's `python:` agent as a sandbox user
in a process of its own; before, it ran inside the evaluator. Prints each side's median wall time over --rounds
and the ratio after/before.

Usage:
    python benchmarks/perf/trust_overhead.py [--before REF] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BEFORE = "f7f53dd"  # main before the trust boundary
BOOT = "import sys; sys.path.insert(0, {root!r}); from bot.cli import main; sys.exit(main(sys.argv[1:]))"


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def pr_repo(root: Path) -> Path:
    """The shop example in a repository of its own: `main`, and `regress` checked out with a planted regression."""
    repo = root / "pr"
    shutil.copytree(REPO / "benchmarks" / "shop", repo / "benchmarks" / "shop")
    for folder in (root, repo):
        folder.chmod(0o755)  # as root, the agent runs as another user and must read the tree
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "shop")
    git(repo, "checkout", "-q", "-b", "regress")
    subprocess.run(
        [
            sys.executable,
            "benchmarks/shop/regressions/apply.py",
            "wrong_synonym",
            "--kb",
            "benchmarks/shop/kb",
        ],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    git(repo, "commit", "-qam", "plant wrong_synonym")
    return repo


def check_once(code_root: Path, repo: Path, out: Path) -> float:
    env = {**os.environ, "SQLCANARY_ANSWER_CACHE": "off"}
    argv = [
        sys.executable,
        "-c",
        BOOT.format(root=str(code_root)),
        "check",
        "benchmarks/shop",
        "--base",
        "main",
    ]
    argv += ["--no-base-cache", "--out", str(out), "-q"]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 1:  # the planted regression must be found by both
        sys.exit(f"{code_root}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default=BEFORE, help=f"the commit to compare with (default {BEFORE})")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqlcanary-trust-") as tmp:
        root = Path(tmp)
        before = root / "before"
        git(REPO, "worktree", "add", "--detach", "-q", str(before), args.before)
        try:
            repo = pr_repo(root)
            sides = {"before": before, "after": REPO}
            for name, code in sides.items():  # warm-up: templates loaded, interpreters cached
                check_once(code, repo, root / f"warm-{name}")
            times: dict[str, list[float]] = {name: [] for name in sides}
            for i in range(args.rounds):
                for name, code in sides.items():
                    times[name].append(check_once(code, repo, root / f"out-{name}-{i}"))
        finally:
            git(REPO, "worktree", "remove", "--force", str(before))
    med = {name: statistics.median(t) for name, t in times.items()}
    who = "root: the agent runs sandboxed" if os.geteuid() == 0 else "not root: no sandbox"
    print(f"sqlcanary check, shop with wrong_synonym planted, no caches ({who}); median of {args.rounds}:")
    for name, label in (("before", f"before ({args.before})"), ("after", "after (this tree)")):
        each = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"  {label:<18} {med[name]:6.2f} s   ({each})")
    print(f"  after / before     {med['after'] / med['before']:6.3f}")


if __name__ == "__main__":
    main()
