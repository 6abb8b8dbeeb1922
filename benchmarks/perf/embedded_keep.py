"""What keeping the embedded PostgreSQL running between commands saves: the start of a command whose server is
stopped (the default: the last command stops it, bot/db/lifecycle.py) beside one whose server was kept running
(`sqlcanary db start`), and beside a small suite's whole run. Private data directory; prints medians and ratios.
    python benchmarks/perf/embedded_keep.py [--repeat 5]
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

_START = "import sys; from pathlib import Path; from bot.db.provision import start_embedded; start_embedded(Path(sys.argv[1]))"
REPO = Path(__file__).resolve().parents[2]


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True, cwd=REPO)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sqlcanary-keep-") as root:
        env = {**os.environ, "SQLCANARY_CACHE_DIR": root}
        env.pop("DATABASE_URL", None)
        start = [sys.executable, "-c", _START, root]
        _timed(start, env)  # initdb once
        stopped = [_timed(start, env) for _ in range(args.repeat)]
        subprocess.run([sys.executable, "-m", "bot", "db", "start"], check=True, env=env, capture_output=True)
        kept = [_timed(start, env) for _ in range(args.repeat)]
        suite = [sys.executable, "-m", "bot", "run", "benchmarks/shop", "-q"]
        run = _timed([*suite, "--out", str(Path(root) / "run.json")], env)
        subprocess.run([sys.executable, "-m", "bot", "db", "stop"], check=True, env=env, capture_output=True)
    s, k = statistics.median(stopped), statistics.median(kept)
    print(f"command start, server stopped before: {s:.2f} s (median of {args.repeat})")
    print(f"command start, server kept running:   {k:.2f} s")
    print(f"saved by keeping it: {s - k:.2f} s per command ({s / k:.1f}x the kept start)")
    print(f"the shop suite's run (loading its template): {run:.1f} s; saving = {100 * (s - k) / run:.1f}%")


if __name__ == "__main__":
    main()
