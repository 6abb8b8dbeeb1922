"""A pull request's tree cannot put code on the path of sqlcanary's own children (README, "Security model").

Each side's `sqlcanary run` and attribution's child start in the tree they evaluate; Python puts the working folder
of `python -c` first on sys.path, so a `yaml.py` or `pydantic.py` of the pull request's would have been imported by
a process holding the database's admin DSN. The children start with `-P`: the head's files named after every
library sqlcanary imports are never imported, and the check still judges the change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.cli import main
from tests.support.attribution_repo import FOLDER, base_repo, commit_pr_kb
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

# Libraries a child of sqlcanary imports after it starts (not yet imported when `python -c` runs its code).
SHADOWED = ("yaml", "pydantic", "psycopg2", "sqlglot", "jinja2", "tqdm", "bot")

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


def _planted(marks: Path) -> str:
    return (
        "import pathlib\n"
        f"pathlib.Path({str(marks)!r}, __name__ + '.imported').write_text('the head ran code in a child')\n"
        "raise ImportError('a module of the pull request')\n"
    )


def _repo(tmp_path: Path, marks: Path) -> Path:
    repo = base_repo(tmp_path)
    for folder in (
        repo,
        repo / FOLDER,
    ):  # the repository's root and the config's folder (where the children run)
        for name in SHADOWED:
            (folder / f"{name}.py").write_text(_planted(marks))
    commit_pr_kb(repo, "three_hunks", "three hunks, and modules named after sqlcanary's libraries")
    git(repo, "checkout", "-q", "main")
    return repo


def test_modules_in_the_head_tree_are_never_imported_by_sqlcanarys_children(
    tmp_path: Path, monkeypatch, pg_dsn: str
):
    marks = tmp_path / "marks"
    marks.mkdir()
    marks.chmod(0o1777)  # so that even a sandboxed process importing them would leave its mark
    repo = _repo(tmp_path, marks)
    monkeypatch.chdir(repo / FOLDER)
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    out = tmp_path / "out"
    argv = ["check", "--base", "main", "--head", "pr", "--dsn", pg_dsn, "--out", str(out), "-q"]
    assert main([*argv, "--attribute-calls", "60"]) == 1  # the change was judged (it regresses cases)
    assert (out / "head.json").is_file() and (out / "comparison.json").is_file()
    assert sorted(p.name for p in marks.iterdir()) == []
