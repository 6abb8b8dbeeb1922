"""The attribution fixture (tests/fixtures/attribution) as a git repository: its tree committed on `main` with the
`command:` agent run by this Python, then a branch `pr` for the test to change and commit. One builder for the
tests that check, attribute or repair a pull request on it."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.tinyrepo import git

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
FOLDER = "analytics"  # the config's folder in the repository


def base_repo(root: Path, *, spec_args: str = "", before: Callable[[Path], None] | None = None) -> Path:
    """`root/repo`: the fixture tree in FOLDER (`before(folder)` may change it first), committed on `main`;
    left on a new branch `pr`. `spec_args` follows the agent's command (`--no-used`)."""
    repo = root / "repo"
    shutil.copytree(FIXTURES / "tree", repo / FOLDER)
    config = repo / FOLDER / "sqlcanary.yml"
    spec = f"command:{sys.executable} agent.py{spec_args}"
    config.write_text(config.read_text().replace("command:PYTHON agent.py", spec))
    if before is not None:
        before(repo / FOLDER)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def commit_pr_kb(repo: Path, pr: str, message: str) -> None:
    """The KB files of `tests/fixtures/attribution/prs/<pr>` over the tree, committed with everything else
    changed or added."""
    shutil.copytree(FIXTURES / "prs" / pr / "kb", repo / FOLDER / "kb", dirs_exist_ok=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
