"""`sqlcanary check` end to end in a temporary git repository holding a copy of the shop example: a branch that
plants a KB regression fails the check and names exactly the cases it breaks; a second check reuses the cached
base run and the answer cache, so the agent is not called at all."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.base.results import read_run
from bot.cli import main
from bot.compare.comparison import Comparison
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
REGRESSION = "wrong_synonym"  # breaks two commerce cases
IDS = "shop-commerce-*"  # 24 cases: enough bystanders to show nothing else moves, and a quick run
SUITE = "benchmarks/shop"

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


@pytest.fixture
def shop_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_dsn: str) -> Path:
    """main: the shop example as shipped; branch `regress`: the same plus one planted KB regression."""
    repo = tmp_path / "repo"
    shutil.copytree(SHOP, repo / SUITE, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "shop")
    git(repo, "checkout", "-q", "-b", "regress")
    subprocess.run(
        [
            sys.executable,
            str(SHOP / "regressions" / "apply.py"),
            REGRESSION,
            "--kb",
            str(repo / SUITE / "kb"),
        ],
        check=True,
        capture_output=True,
    )
    git(repo, "commit", "-q", "-am", f"plant {REGRESSION}")
    git(repo, "checkout", "-q", "main")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)  # conftest turns it off for other tests
    return repo


def breaks() -> set[str]:
    return set(yaml.safe_load((SHOP / "regressions" / f"{REGRESSION}.yml").read_text())["breaks"])


def check(pg_dsn: str, out: Path, *extra: str) -> int:
    return main(["check", SUITE, "--id", IDS, "--dsn", pg_dsn, "--out", str(out), *extra])


def test_check_names_exactly_the_broken_cases_and_reuses_the_cached_base(shop_repo, pg_dsn, tmp_path, capfd):
    first = tmp_path / "first"
    assert check(pg_dsn, first, "--base", "main", "--head", "regress", "-q") == 1
    comparison = Comparison.model_validate_json((first / "comparison.json").read_text())
    assert comparison.verdict == "regressions"
    assert {c.id for c in comparison.of("regressed")} == breaks()
    assert comparison.counts["regressed"] == len(breaks())
    assert comparison.counts["still_passing"] == comparison.overall.head.total - len(breaks())
    base, head = read_run(first / "base.json"), read_run(first / "head.json")
    assert base.meta.git_sha == git(shop_repo, "rev-parse", "main")
    assert head.meta.git_sha == git(shop_repo, "rev-parse", "regress")
    assert base.meta.agent_calls == head.meta.agent_calls == len(base.cases) == 24
    assert base.meta.kb_fingerprint != head.meta.kb_fingerprint
    assert all(c.source.startswith(f"{SUITE}/cases/") for c in base.cases)  # no temporary worktree paths
    assert (first / "comment.md").is_file()
    assert git(shop_repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # all removed

    # The author checks the branch out and runs the check again: the working tree is head.
    git(shop_repo, "checkout", "-q", "regress")
    capfd.readouterr()
    second = tmp_path / "second"
    assert check(pg_dsn, second, "--base", "main") == 1
    assert "reusing the cached run" in capfd.readouterr().err
    assert (second / "base.json").read_text() == (
        first / "base.json"
    ).read_text()  # the cached run, unchanged
    again = read_run(second / "head.json")
    assert (again.meta.agent_calls, again.meta.cache_hits) == (0, 24)  # unchanged KB: no agent call at all
    assert again.meta.agent_fingerprint == head.meta.agent_fingerprint  # same commit, another folder
    assert {
        c.id for c in Comparison.model_validate_json((second / "comparison.json").read_text()).of("regressed")
    } == breaks()
    assert git(shop_repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_check_passes_when_head_changes_nothing(shop_repo, pg_dsn, tmp_path):
    assert (
        check(pg_dsn, tmp_path / "out", "--base", "main", "--head", "main", "-q", "--id", "shop-ads-*") == 0
    )
    comparison = Comparison.model_validate_json((tmp_path / "out" / "comparison.json").read_text())
    assert comparison.verdict == "pass" and comparison.of("regressed") == []


def test_check_without_base_finds_a_master_branch(shop_repo, pg_dsn, tmp_path, capfd):
    """A `git init` repository whose default branch is `master`: `check` on the regressing branch, with no
    --base, compares it with master (not an error that asks for main)."""
    git(shop_repo, "branch", "-m", "main", "master")
    git(shop_repo, "checkout", "-q", "regress")
    assert check(pg_dsn, tmp_path / "out") == 1  # the planted regression, found against master
    out = capfd.readouterr()
    assert "base master (" in out.out + out.err
    # the terminal says why, as the comment does: the changed KB lines the regressed answers used, with the diff
    why = out.out.split("why (changed KB lines the regressed answers used):\n", 1)[1]
    assert why.startswith(f"  {SUITE}/kb/") and "\n    -" in why and "\n    +" in why
    assert read_run(tmp_path / "out" / "base.json").meta.git_sha == git(shop_repo, "rev-parse", "master")
    comparison = Comparison.model_validate_json((tmp_path / "out" / "comparison.json").read_text())
    assert {c.id for c in comparison.of("regressed")} == breaks()


@pytest.mark.parametrize("ref", ["-x", "--upload-pack=touch", "no-such-branch", "main..regress", "a b"])
def test_check_refuses_bad_refs(shop_repo, pg_dsn, tmp_path, capfd, ref):
    assert main(["check", SUITE, f"--base={ref}", "--dsn", pg_dsn, "--out", str(tmp_path / "out")]) == 2
    assert "ref" in capfd.readouterr().err
    assert not (tmp_path / "out").exists()


def test_check_outside_a_repository_exits_2(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--base", "main"]) == 2
    assert "not inside a git repository" in capfd.readouterr().err
