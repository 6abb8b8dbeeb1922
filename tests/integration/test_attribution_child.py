"""Attribution runs in a child process of its own (bot.check.causes_child), as each side's run does: the check's
process, which holds the GitHub token and the LLM key, neither starts the head's agent for its re-asks nor gives
the process that does its environment (README, "Security model")."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.cli import main
from bot.compare.comparison import Comparison
from tests.support.attribution_repo import FOLDER, base_repo, commit_pr_kb
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

# Prepended to the fixture's agent: each answer leaves a note of the agent's environment and its parent process.
SPY = """import json as _json, os as _os, pathlib as _pathlib
_parent = _pathlib.Path(f"/proc/{_os.getppid()}/cmdline").read_bytes().replace(b"\\0", b" ").decode()
_pathlib.Path(NOTES, f"{_os.getpid()}.json").write_text(
    _json.dumps({"keys": sorted(_os.environ), "parent": _parent})
)
"""

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder every agent may write to (tests/conftest.py makes tmp_path reachable for a sandboxed agent), not
    in a folder every user may write, where a sandbox's leftovers are removed when it closes."""
    folder = tmp_path / "notes"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def _repo(tmp_path: Path, notes: Path) -> Path:
    def spy(folder: Path) -> None:
        agent = folder / "agent.py"
        agent.write_text(SPY.replace("NOTES", repr(str(notes))) + agent.read_text())

    repo = base_repo(tmp_path, before=spy)
    commit_pr_kb(repo, "three_hunks", "three hunks")
    git(repo, "checkout", "-q", "main")
    return repo


def test_attribution_asks_the_agent_from_a_child_that_holds_no_token(
    tmp_path: Path, monkeypatch, pg_dsn: str, notes: Path
):
    repo = _repo(tmp_path, notes)
    monkeypatch.chdir(repo / FOLDER)
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_spytoken0123456789")
    monkeypatch.setenv("INPUT_OPENAI-API-KEY", "sk-spykey0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-spykey0123456789")
    started: list[dict[str, str]] = []
    real = subprocess.Popen

    def spying(argv, *args, **kwargs):
        if any("causes_child" in str(a) for a in argv):
            started.append(dict(kwargs["env"]))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spying)
    out = tmp_path / "out"
    argv = ["check", "--base", "main", "--head", "pr", "--dsn", pg_dsn, "--out", str(out), "-q"]
    assert main([*argv, "--attribute-calls", "60"]) == 1

    comparison = Comparison.model_validate_json((out / "comparison.json").read_text())
    assert any("that change broke them" in w for w in comparison.warnings)  # the attribution ran
    assert len(started) == 1  # one attribution child, with none of the check's secrets
    env = started[0]
    assert not {"GITHUB_TOKEN", "OPENAI_API_KEY"} & env.keys()
    assert not [k for k in env if k.startswith("INPUT_")]
    answers = [json.loads(p.read_text()) for p in notes.glob("*.json")]
    by_child = [a for a in answers if "bot.check.causes_child" in a["parent"]]
    assert by_child, [a["parent"][:120] for a in answers]  # the re-asks' agent is the attribution child's
    assert all("pytest" not in a["parent"] for a in answers)  # never the check's own process
    assert all("GITHUB_TOKEN" not in a["keys"] for a in answers)
