"""Start-up of the `sqlcanary` command, against a bare Python start measured in the same run (issue 26).

    python benchmarks/perf/cli_start.py [--rounds 15]

Runs, alternately and pair by pair, this Python doing nothing (`python -c pass`), `sqlcanary --version` and
`sqlcanary --help` (the `sqlcanary` script installed beside this Python, as a user runs it; `python -m bot` when
there is none), and prints each one's median wall time and its ratio to the bare start. Target: `--version` within 0.15 s; neither imports the
runner, the database layer or sqlglot (bot.cli imports a command's module only when that command runs).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The `sqlcanary` this Python installed (what a user types), else `python -m bot` (which adds runpy's start).
_SCRIPT = Path(sys.executable).with_name("sqlcanary")
SQLCANARY = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "bot"]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "sqlcanary --version": [*SQLCANARY, "--version"],
    "sqlcanary --help": [*SQLCANARY, "--help"],
}


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    for argv in COMMANDS.values():
        timed(argv)  # warm the file cache
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.rounds):
        for name, argv in COMMANDS.items():
            times[name].append(timed(argv))
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':<22} {'median s':>9} {'x bare':>7}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<22} {median:>9.3f} {median / bare:>7.1f}")
    version = statistics.median(times["sqlcanary --version"])
    verdict = "within" if version <= 0.15 else "OVER"
    print(f"`sqlcanary --version`: {version:.3f} s, {verdict} the 0.15 s target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
