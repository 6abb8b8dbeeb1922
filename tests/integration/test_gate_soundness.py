"""A gate that cannot be fooled, end to end on real PostgreSQL and real git: stale answers never pass a change the
agent could see, a config's relative agent path works from any folder, an agent that answers nothing exits 2, and
the first pull request that adds sqlcanary is judged on its own instead of failing for want of a baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.base.results import read_run
from bot.cli import main
from bot.compare.comparison import Comparison
from tests.support.tinyrepo import GOOD, config, git, make_tiny_repo

pytestmark = pytest.mark.integration

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_tiny_repo(tmp_path / "repo")
    monkeypatch.chdir(root)
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))  # a fresh cache
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)  # conftest turns it off for other tests
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    return root


def branch_breaking_the_data_file(root: Path) -> None:
    git(root, "checkout", "-q", "-b", "break")
    (root / "data/answers.json").write_text(json.dumps(GOOD | {"names": "SELECT city FROM customers"}))
    git(root, "commit", "-qam", "break names through a file the command does not name")


def check(pg_dsn: str, out: Path, *extra: str) -> int:
    return main(
        [
            "check",
            "--config",
            "evals/agent/sqlcanary.yml",
            "--base",
            "main",
            "--dsn",
            pg_dsn,
            "--out",
            str(out),
            "-q",
            *extra,
        ]
    )


def test_a_change_to_a_file_the_agent_reads_fails_the_check_with_a_fresh_cache(repo, pg_dsn, tmp_path):
    branch_breaking_the_data_file(repo)
    assert check(pg_dsn, tmp_path / "out") == 1
    comparison = Comparison.model_validate_json((tmp_path / "out/comparison.json").read_text())
    assert [c.id for c in comparison.of("regressed")] == ["names"]
    base, head = read_run(tmp_path / "out/base.json"), read_run(tmp_path / "out/head.json")
    assert base.meta.agent_fingerprint != head.meta.agent_fingerprint
    assert head.meta.agent_calls == 3 and head.meta.cache_hits == 0  # the base's answers were not replayed
    # Again, with the cache now full: the same verdict, and the head's answers now come from the cache.
    assert check(pg_dsn, tmp_path / "again") == 1
    again = read_run(tmp_path / "again/head.json")
    assert (again.meta.agent_calls, again.meta.cache_hits) == (0, 3)


def test_a_branch_that_deletes_the_case_it_broke_still_fails(repo, pg_dsn, tmp_path):
    branch_breaking_the_data_file(repo)
    cases = repo / "evals/suite/cases/all.yml"
    text = cases.read_text()
    start = text.index("- id: names")
    cases.write_text(text[:start] + text[text.index("- id: cities") :])
    git(repo, "commit", "-qam", "delete the case the change broke")
    assert check(pg_dsn, tmp_path / "out") == 1
    comparison = Comparison.model_validate_json((tmp_path / "out/comparison.json").read_text())
    assert [c.id for c in comparison.of("removed")] == ["names"] and comparison.of("regressed") == []
    assert any("removed" in r and "names" in r for r in comparison.reasons)
    assert check(pg_dsn, tmp_path / "allowed", "--allow-removed") == 0  # said out loud, it passes


def test_narrowed_inputs_that_miss_the_file_never_replay_answers_to_the_head(repo, pg_dsn, tmp_path):
    """`agent.inputs` narrows trusted runs only: a plain run still replays across a file outside the globs (the
    risk the README spells out), but a check's head is keyed by its whole tree, so its change is seen."""
    (repo / "evals/agent/sqlcanary.yml").write_text(config(["agent.py"]))
    git(repo, "commit", "-qam", "narrow the agent's inputs")
    cfg = "evals/agent/sqlcanary.yml"
    assert main(["run", "--config", cfg, "--dsn", pg_dsn, "--out", str(tmp_path / "a.json"), "-q"]) == 0
    branch_breaking_the_data_file(repo)
    assert main(["run", "--config", cfg, "--dsn", pg_dsn, "--out", str(tmp_path / "b.json"), "-q"]) == 0
    plain = read_run(tmp_path / "b.json")
    assert (plain.meta.agent_calls, plain.meta.cache_hits) == (0, 3)
    assert plain.meta.cache_basis == "agent.inputs: 1 glob"
    assert check(pg_dsn, tmp_path / "out") == 1
    base, head = read_run(tmp_path / "out/base.json"), read_run(tmp_path / "out/head.json")
    assert (base.meta.agent_calls, base.meta.cache_hits) == (0, 3)  # the base's side keeps the narrowed key
    assert (head.meta.agent_calls, head.meta.cache_hits) == (3, 0)
    assert (head.meta.cache_basis or "").startswith("the whole head tree at ")


@pytest.mark.parametrize("where", [".", "evals", "evals/agent", "data"])
def test_a_relative_agent_command_in_the_config_works_from_any_folder(
    repo, pg_dsn, tmp_path, monkeypatch, where
):
    monkeypatch.chdir(repo / where)
    cfg = repo / "evals/agent/sqlcanary.yml"
    assert (
        main(["run", "--config", str(cfg), "--dsn", pg_dsn, "--out", str(tmp_path / "run.json"), "-q"]) == 0
    )
    assert read_run(tmp_path / "run.json").summary.passed == 3


def test_an_agent_that_answers_no_case_exits_2_naming_the_reason(repo, pg_dsn, tmp_path, capfd):
    (repo / "data/answers.json").write_text("not json")
    cfg = "evals/agent/sqlcanary.yml"
    assert main(["run", "--config", cfg, "--dsn", pg_dsn, "--out", str(tmp_path / "run.json"), "-q"]) == 2
    err = capfd.readouterr().err
    assert "failed on every case (3)" in err and "command:python3 agent.py" in err
    assert len(read_run(tmp_path / "run.json").cases) == 3  # nothing lost


@pytest.fixture
def first_pr(repo: Path) -> Path:
    """main predates sqlcanary: the suite, the agent and its config arrive in the pull request."""
    git(repo, "branch", "add-sqlcanary")
    git(repo, "rm", "-rq", "evals")
    git(repo, "commit", "-qm", "main before sqlcanary")
    git(repo, "checkout", "-q", "add-sqlcanary")
    return repo


def test_the_first_pr_that_adds_the_suite_is_judged_on_the_head_alone(first_pr, pg_dsn, tmp_path):
    assert check(pg_dsn, tmp_path / "out") == 0
    comparison = Comparison.model_validate_json((tmp_path / "out/comparison.json").read_text())
    assert comparison.verdict == "pass"
    assert not (tmp_path / "out/base.json").exists()
    comment = (tmp_path / "out/comment.md").read_text()
    assert "No baseline" in comment and "head only" in comment.lower()


def test_the_first_pr_below_its_min_pass_rate_fails(first_pr, pg_dsn, tmp_path):
    (first_pr / "data/answers.json").write_text(json.dumps(GOOD | {"names": "SELECT city FROM customers"}))
    cfg = first_pr / "evals/agent/sqlcanary.yml"
    cfg.write_text(cfg.read_text() + "gate: {min_pass_rate: 0.9}\n")
    git(first_pr, "commit", "-qam", "one case wrong, and a minimum pass rate")
    assert check(pg_dsn, tmp_path / "out") == 1
    comparison = Comparison.model_validate_json((tmp_path / "out/comparison.json").read_text())
    assert comparison.verdict == "regressions"
    assert any("below the minimum 90.0%" in r for r in comparison.reasons)
    assert "No baseline" in (tmp_path / "out/comment.md").read_text()
