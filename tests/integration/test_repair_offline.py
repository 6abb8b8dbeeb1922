"""Issue 25, item 8: `sqlcanary repair` with no LLM configured applies the verified partial revert itself.

Through the real CLI, in processes of its own: a git repository holding the attribution fixture (a suite of
one-metric questions, a KB of `name: SQL` lines and a `command:` agent reading it; tests/fixtures/attribution), a
pull request committed on a branch, `sqlcanary check --out DIR` against the base commit, then `sqlcanary repair
--from-check DIR` with no API key and no endpoint. The `mixed` pull request fixes `buyers` and breaks `big` in one
hunk: the repair reverts the breaking line only and keeps the fix. A pull request whose only change breaks a case
has no partial revert (reverting it is the whole change): nothing is written and the exit code says no repair was
found (README, "Repairing the knowledge base")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.attribution_repo import FOLDER, base_repo
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "attribution"
METRICS = f"{FOLDER}/kb/metrics.yaml"
BIG_BROKEN = "big_orders: SELECT count(*) FROM orders WHERE amount > 1000\n"
BIG_BASE = "big_orders: SELECT count(*) FROM orders WHERE amount > 100\n"
BUYERS_FIX = "buyers: SELECT count(DISTINCT customer) FROM orders\n"

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


def make_repo(root: Path, metrics: str) -> Path:
    """The fixture tree committed on `main`, then `metrics` (the head's KB metrics file) committed on `pr`."""
    repo = base_repo(root)
    (repo / METRICS).write_text(metrics)
    git(repo, "commit", "-qam", "the pull request")
    return repo


def sqlcanary(repo: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, with no LLM: no API key, no endpoint."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "SQLCANARY_LLM_BASE_URL")}
    env |= {"SQLCANARY_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def check(repo: Path, tmp_path: Path, dsn: str) -> Path:
    out = tmp_path / "check"
    done = sqlcanary(repo, tmp_path, "check", FOLDER, "--base", "main", "--dsn", dsn, "--out", str(out), "-q")
    assert done.returncode == 1, done.stderr  # the pull request regresses `big`
    comparison = json.loads((out / "comparison.json").read_text())
    assert [c["id"] for c in comparison["cases"] if c["transition"] == "regressed"] == ["big"], done.stderr
    return out


def status(repo: Path) -> list[str]:
    """`git status --porcelain` lines, untracked files and ignored ones included."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--ignored"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_without_a_model_repair_applies_the_partial_revert_and_keeps_the_fix(tmp_path: Path, pg_dsn: str):
    mixed = (FIXTURES / "prs" / "mixed" / "kb" / "metrics.yaml").read_text()
    assert BIG_BROKEN in mixed and BUYERS_FIX in mixed
    repo = make_repo(tmp_path, mixed)
    found = check(repo, tmp_path, pg_dsn)
    argv = ["repair", "--from-check", str(found), "--dsn", pg_dsn, "-q"]

    # RUN.json --base BASE.json (no comparison.json beside them: repair compares the two runs itself)
    runs = [str(found / "head.json"), "--base", str(found / "base.json"), "--dsn", pg_dsn, "-q"]
    shown = sqlcanary(repo, tmp_path, "repair", *runs, "--out", str(tmp_path / "dry"), "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "no LLM configured (dry run): the verified partial revert of" in shown.stdout
    assert f"-{BIG_BROKEN}+{BIG_BASE}" in shown.stdout  # the diff it would apply
    assert status(repo) == []  # a dry run writes nothing

    done = sqlcanary(repo, tmp_path, *argv, "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (
        f"no LLM configured: applied the verified partial revert of {METRICS} line 5, restoring 1 case(s) (big)"
        in done.stdout
    )
    text = (repo / METRICS).read_text()
    assert BIG_BASE in text and BIG_BROKEN not in text  # the breaking line has its base line back
    assert BUYERS_FIX in text  # the pull request's fix stays
    assert status(repo) == [f" M {METRICS}"]  # only the KB file changed: no journal, no results in the tree

    outcome = json.loads((tmp_path / "out" / "outcome.json").read_text())
    revert = outcome["revert"]
    assert revert["applied"] and revert["restored"] == ["big"] and revert["regressed"] == ["big"]
    assert revert["reverted"] == [f"{METRICS} line 5"] and revert["kept"] == [f"{METRICS} line 4"]
    assert outcome["files_changed"] == ["kb/metrics.yaml"]
    assert set(outcome["final_statuses"].values()) == {"passed"}
    assert [(c["id"], c["before"], c["after"], c["repaired"]) for c in outcome["cases"]] == [
        ("big", "failed", "passed", True)
    ]
    diff = (tmp_path / "out" / "kb.diff").read_text()
    body = [ln for ln in diff.splitlines(keepends=True) if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    assert body == [f"-{BIG_BROKEN}", f"+{BIG_BASE}"]  # the fix on the line above is not touched
    report = (tmp_path / "out" / "repair_report.md").read_text()
    assert "applied the verified partial revert" in report and f"+{BIG_BASE}" in report


def test_without_a_model_a_whole_revert_is_no_repair_and_nothing_is_written(tmp_path: Path, pg_dsn: str):
    base = (FIXTURES / "tree" / "kb" / "metrics.yaml").read_text()
    repo = make_repo(tmp_path, base.replace(BIG_BASE, BIG_BROKEN))  # its one change breaks `big`
    found = check(repo, tmp_path, pg_dsn)
    out = tmp_path / "out"
    done = sqlcanary(repo, tmp_path, "repair", "--from-check", str(found), "--dsn", pg_dsn, "--out", str(out))
    assert done.returncode == 1, done.stderr  # README: no repair found
    assert "no LLM configured, and no verified partial revert holds" in done.stdout
    assert "whole revert, not a partial one" in done.stdout and "nothing was written" in done.stdout
    assert status(repo) == []
    assert (repo / METRICS).read_text() == base.replace(BIG_BASE, BIG_BROKEN)
    outcome = json.loads((out / "outcome.json").read_text())
    assert not outcome["revert"]["applied"] and not outcome["revert"]["holds"]
    assert outcome["files_changed"] == [] and (out / "kb.diff").read_text() == ""
    cases = {c["id"]: c for c in outcome["cases"]}
    assert sorted(cases) == ["big", "buyers"] and not any(c["repaired"] for c in cases.values())
    assert "whole revert" in cases["big"]["note"]
    assert "not a regression" in cases["buyers"]["note"]  # it fails at the base too: no revert is its repair
