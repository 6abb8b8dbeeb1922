"""A check reads the base's suite once in its own process (bot.check.sides.Side keeps what it read), and nothing
of the head's: the head's config and suite are read apart by a child holding no secret
(bot.check.head_reader), and the base run's cache key, the reports' gold SQL and the attribution all take
what was read, none parses it again. The children that evaluate each tree are other processes, with their own
reads."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from bot.base import yamlread
from bot.cases import loader
from bot.cli import main
from bot.compare.comparison import Comparison
from tests.support.attribution_repo import FOLDER, base_repo, commit_pr_kb
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration


if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


def test_a_check_parses_the_bases_suite_once_and_nothing_of_the_heads(
    tmp_path: Path, monkeypatch, pg_dsn: str
):
    repo = base_repo(tmp_path)
    commit_pr_kb(repo, "three_hunks", "three hunks")
    git(repo, "checkout", "-q", "main")
    monkeypatch.chdir(repo / FOLDER)
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)

    parsed: Counter[str] = Counter()
    real = loader.load_suite

    def counting(location: str | Path):
        parsed[str(Path(location).resolve())] += 1
        return real(location)

    monkeypatch.setattr(loader, "load_suite", counting)
    yaml_read: list[str] = []
    real_yaml = yamlread.load_yaml_text

    def recording(text: str, path: str):
        yaml_read.append(str(Path(path).resolve()))
        return real_yaml(text, path)

    monkeypatch.setattr(yamlread, "load_yaml_text", recording)
    monkeypatch.setattr("bot.run.setup.load_suite", counting)
    monkeypatch.setattr("bot.check.sides.load_suite", counting)  # bound when another test imported it first
    out = tmp_path / "out"
    argv = ["check", "--base", "main", "--head", "pr", "--dsn", pg_dsn, "--out", str(out), "-q"]
    assert main([*argv, "--attribute-calls", "60"]) == 1

    comparison = Comparison.model_validate_json((out / "comparison.json").read_text())
    assert sorted(c.id for c in comparison.of("regressed")) == ["revenue", "revenue-total"]
    assert any("that change broke them" in w for w in comparison.warnings)  # the attribution ran
    assert all(c.gold_sql for c in comparison.cases)  # the reports' gold SQL, from the head's suite
    assert len(parsed) == 1, parsed  # the base's worktree; the head's suite was read apart
    (base_suite,) = parsed
    assert "sqlcanary-base-" in base_suite and parsed[base_suite] == 1, parsed
    assert yaml_read and not [p for p in yaml_read if "sqlcanary-base-" not in p], yaml_read
