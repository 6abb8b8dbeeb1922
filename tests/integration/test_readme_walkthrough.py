"""The README's "Your first suite, step by step", run as written: every `File `PATH`:` block is written where the
walkthrough says (relative to the folder its commands stand in), every command block marked
`<!-- walkthrough-run: exit N -->` runs in a real shell with the real CLI on a real PostgreSQL (DATABASE_URL) and
must exit N. A README edit that breaks a step a new user would follow fails here."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
_SECTION = re.compile(r"^## Your first suite, step by step\n(.*?)^## ", re.S | re.M)
_STEP = re.compile(
    r"^File `(?P<path>[^`]+)`:\n+```\w*\n(?P<text>.*?)^```"
    r"|^<!-- walkthrough-run: exit (?P<rc>\d+) -->\n```bash\n(?P<cmd>.*?)^```",
    re.S | re.M,
)


@dataclass(frozen=True)
class Step:
    path: str | None  # a file to write, or
    text: str
    rc: int | None  # a command and the exit code it must give


def walkthrough() -> list[Step]:
    section = _SECTION.search(README.read_text(encoding="utf-8"))
    assert section, "README.md has no '## Your first suite, step by step' section"
    return [
        Step(m["path"], m["text"], None) if m["path"] else Step(None, m["cmd"], int(m["rc"]))
        for m in _STEP.finditer(section.group(1))
    ]


def test_the_walkthrough_is_found_whole() -> None:
    steps = walkthrough()
    assert sum(s.rc is not None for s in steps) >= 4 and sum(s.path is not None for s in steps) >= 6
    assert [s.rc for s in steps if s.rc is not None][-1] == 1  # it ends on the check that catches the break


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path, pg_dsn: str) -> None:
    home = tmp_path / "walk"
    home.mkdir()
    home.chmod(0o755)  # the sandboxed agent's user (when root) reads the files
    shims = tmp_path / "bin"
    shims.mkdir()
    shim = shims / "sqlcanary"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m bot "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}",
        "DATABASE_URL": pg_dsn,
        "NO_COLOR": "1",
        "GIT_AUTHOR_NAME": "walkthrough",
        "GIT_AUTHOR_EMAIL": "walkthrough@example.invalid",
        "GIT_COMMITTER_NAME": "walkthrough",
        "GIT_COMMITTER_EMAIL": "walkthrough@example.invalid",
        "PYTHONPATH": str(README.parent),
    }
    cwd, where = home, tmp_path / "cwd"
    outputs: list[str] = []
    for step in walkthrough():
        if step.path is not None:
            target = cwd / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text, encoding="utf-8")
            continue
        script = (
            f"cd {shlex.quote(str(cwd))}\n{step.text}\nrc=$?\npwd > {shlex.quote(str(where))}\nexit $rc\n"
        )
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == step.rc, (
            f"{step.text}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
        cwd = Path(where.read_text().strip())
        outputs.append(done.stdout)

    # after step 5 every case passed at the base; step 6 names the regressed case and the KB line that broke it
    run = json.loads((cwd / "sqlcanary-results" / "base.json").read_text(encoding="utf-8"))
    assert {c["id"]: c["status"] for c in run["cases"]} == {
        "patients-per-city": "passed",
        "fees-2025": "passed",
        "visits-per-department-2025": "passed",
    }
    check = outputs[-1]
    assert "regressed (1):" in check and "fees-2025" in check
    assert "kb/queries/visit_fees.sql line 3: fees-2025" in check, check
