"""`sqlcanary init` in an empty folder, then `sqlcanary run` there with no argument: both real processes, the run on
a real PostgreSQL (DATABASE_URL, as a user's environment gives it); exit 0, both example cases pass through the
example `command:` agent, whose answers name the KB lines they used; the same from a subfolder (the config is found
upward). A second `init` refuses and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def sqlcanary(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_init_then_run_is_green_and_a_second_init_refuses(tmp_path: Path, pg_dsn: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    project.chmod(0o755)  # the sandboxed agent's user (when root) reads the files init writes
    env = {**os.environ, "DATABASE_URL": pg_dsn, "NO_COLOR": "1"}

    made = sqlcanary("init", cwd=project, env=env)
    assert made.returncode == 0, made.stderr
    assert "wrote sqlcanary.yml" in made.stdout and "wrote .github/workflows/sqlcanary.yml" in made.stdout

    checked = sqlcanary("validate", cwd=project, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "valid: sqlcanary.yml" in checked.stdout and "(2 cases)" in checked.stdout

    ran = sqlcanary("run", cwd=project, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run = json.loads((project / "sqlcanary-results" / "run.json").read_text(encoding="utf-8"))
    statuses = {c["id"]: c["status"] for c in run["cases"]}
    assert statuses == {"customers-per-country": "passed", "revenue-2025": "passed"}
    used = {c["id"]: c["prediction"]["used"] for c in run["cases"]}
    assert used == {
        "customers-per-country": ["kb/queries/customers_per_country.sql:1-4"],
        "revenue-2025": ["kb/queries/revenue_2025.sql:1-4"],
    }

    from_below = sqlcanary("run", "--out", str(tmp_path / "below.json"), cwd=project / "cases", env=env)
    assert from_below.returncode == 0, from_below.stdout + from_below.stderr  # the config is found upward
    below = json.loads((tmp_path / "below.json").read_text(encoding="utf-8"))
    assert [c["status"] for c in below["cases"]] == ["passed", "passed"]

    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    again = sqlcanary("init", cwd=project, env=env)
    assert again.returncode == 2
    assert f"{project / 'sqlcanary.yml'}: already exists" in again.stderr
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
