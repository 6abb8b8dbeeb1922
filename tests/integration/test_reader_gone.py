"""A reader that leaves early (`sqlcanary run -q | head -1`): the command finishes, writes its files and exits
with its own code; no "internal error" (bot.base.streams). The reader here closes the pipe before the command
prints anything, so every write of the command meets a closed pipe: the same as `head` exiting early, without
a race."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.base.results import read_run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "tests" / "fixtures" / "runs"
SINGLE = ROOT / "tests" / "fixtures" / "suites" / "single" / "single.yml"


def reader_gone(argv: list[str], cwd: Path, *, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `sqlcanary ARGV` with its stdout's reader gone from the start; (exit code, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", *argv],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read()
    return proc.wait(timeout=300), stderr


def test_compare_keeps_its_out_file_and_its_exit_code(tmp_path: Path) -> None:
    out = tmp_path / "comparison.json"
    code, stderr = reader_gone(
        ["compare", str(RUNS / "gate_base.json"), str(RUNS / "gate_head.json"), "--out", str(out)], tmp_path
    )
    assert code == 1, stderr  # regressions found, as without the pipe
    assert out.is_file() and '"regressions"' in out.read_text(encoding="utf-8")
    assert "internal error" not in stderr and "BrokenPipeError" not in stderr


def test_run_finishes_and_writes_its_results(tmp_path: Path, pg_dsn: str) -> None:
    out = tmp_path / "run.json"
    code, stderr = reader_gone(
        ["run", str(SINGLE), "--agent", "gold", "--out", str(out), "-q"],
        tmp_path,
        env={"DATABASE_URL": pg_dsn},
    )
    assert code == 0, stderr
    run = read_run(out)
    assert run.cases and all(c.status == "passed" for c in run.cases)
    assert "internal error" not in stderr and "BrokenPipeError" not in stderr


def test_db_status_exits_cleanly(tmp_path: Path, pg_dsn: str) -> None:
    code, stderr = reader_gone(["db", "status"], tmp_path, env={"DATABASE_URL": pg_dsn})
    assert code == 0, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
