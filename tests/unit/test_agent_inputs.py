"""The answer cache's fingerprint is sound by default: in a git repository every tracked file counts as it is in
the working tree (plus untracked files in the agent's folder), except the suite's case files and sqlcanary's own
output; `agent.inputs` narrows it, `agent.env` adds variables, and a tree too large to hash is never cached."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.base.errors import ConfigError
from bot.config.model import load_config
from bot.run.fingerprint import MAX_TREE_FILES, AgentInputs, agent_fingerprint

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)

SPEC = "command:python3 agent.py"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_repo(root: Path) -> Path:
    """repo/evals/agent (the config folder) reading repo/data/answers.json; cases in evals/suite/cases."""
    files = {
        "evals/agent.py": "import json; print(json.dumps({'sql': open('../data/answers.json').read()}))\n",
        "evals/sqlcanary.yml": f"agent: {SPEC}\n",
        "evals/suite/suite.yml": "databases: {d: d.sql}\n",
        "evals/suite/cases/a.yml": "- {id: a, question: q, gold_sql: SELECT 1}\n",
        "data/answers.json": "SELECT 1\n",
        "prompts/system.txt": "You write SQL.\n",
        "README.md": "docs\n",
        ".gitignore": "sqlcanary-results/\n*.log\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def fp(repo: Path, inputs: AgentInputs = AgentInputs(), environ: dict[str, str] | None = None) -> str | None:
    base = repo / "evals"
    case_files = (base / "suite" / "suite.yml", base / "suite" / "cases" / "a.yml")
    return agent_fingerprint(SPEC, {}, base, "", inputs=inputs, environ=environ or {}, exclude=case_files)


@pytest.mark.parametrize(
    "edit,changes",
    [
        ("data/answers.json", True),  # a file the agent reads, named nowhere in the command
        ("prompts/system.txt", True),
        ("README.md", True),  # it could read it: the default cannot know it does not
        ("evals/suite/cases/a.yml", False),  # case text is in each answer's own key
        ("evals/suite/suite.yml", False),
        ("evals/scratch.txt", True),  # untracked, in the agent's folder
        ("notes/untracked.txt", False),  # untracked, elsewhere
        ("evals/run.log", False),  # ignored
        ("evals/sqlcanary-results/run.json", False),  # our own output
    ],
)
def test_what_changes_the_default_fingerprint_in_a_repository(tmp_path, edit, changes):
    repo = make_repo(tmp_path / "repo")
    before = fp(repo)
    (repo / edit).parent.mkdir(parents=True, exist_ok=True)
    (repo / edit).write_text("something else\n")
    after = fp(repo)
    assert before is not None and after is not None
    assert (after != before) is changes


def test_a_deleted_tracked_file_changes_it_and_a_committed_edit_does_not_matter(tmp_path):
    repo = make_repo(tmp_path / "repo")
    before = fp(repo)
    (repo / "prompts" / "system.txt").unlink()
    assert fp(repo) != before
    git(repo, "checkout", "--", "prompts/system.txt")
    assert fp(repo) == before
    (repo / "data" / "answers.json").write_text("SELECT 2\n")
    dirty = fp(repo)
    git(repo, "commit", "-qam", "edit")  # the same content, now committed: the same fingerprint
    assert fp(repo) == dirty


def test_two_checkouts_of_one_commit_agree(tmp_path):
    repo = make_repo(tmp_path / "repo")
    other = tmp_path / "elsewhere" / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(other)], check=True, capture_output=True)
    assert fp(repo) == fp(other)


def test_narrowed_inputs_ignore_what_they_do_not_match(tmp_path):
    repo = make_repo(tmp_path / "repo")
    narrow = AgentInputs(globs=("agent.py",))
    before = fp(repo, narrow)
    (repo / "data" / "answers.json").write_text("SELECT 2\n")
    assert fp(repo, narrow) == before  # the risk the README names: answers.json is not an input any more
    (repo / "evals" / "agent.py").write_text("print('{}')\n")
    assert fp(repo, narrow) != before
    assert fp(repo, AgentInputs(globs=("agent.py", "../data/*.json"))) != fp(repo, narrow)


def test_named_environment_variables_count_and_others_do_not(tmp_path):
    repo = make_repo(tmp_path / "repo")
    inputs = AgentInputs(env=("MODEL",))
    a = fp(repo, inputs, {"MODEL": "m1", "OTHER": "x"})
    assert fp(repo, inputs, {"MODEL": "m1", "OTHER": "y"}) == a
    assert fp(repo, inputs, {"MODEL": "m2", "OTHER": "x"}) != a
    assert fp(repo, inputs, {}) != a  # unset is not the empty string either
    assert fp(repo, inputs, {"MODEL": ""}) != fp(repo, inputs, {})


def test_a_folder_outside_git_too_large_to_hash_is_not_cached(tmp_path, monkeypatch):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "agent.py").write_text("")
    monkeypatch.setattr("bot.run.fingerprint.MAX_TREE_FILES", 3)
    for i in range(3):
        (root / f"f{i}.txt").write_text(str(i))
    assert agent_fingerprint(SPEC, {}, root, "") is None
    assert MAX_TREE_FILES >= 10000  # the real limit is generous


def test_the_config_declares_inputs_env_and_remote(tmp_path):
    (tmp_path / "sqlcanary.yml").write_text(
        "agent:\n  spec: command:python3 agent.py\n  inputs: [agent.py, 'kb/**']\n  env: MODEL\n  remote: true\n"
    )
    agent = load_config(tmp_path / "sqlcanary.yml").agent
    assert agent is not None
    assert (agent.inputs, agent.env, agent.remote) == (("agent.py", "kb/**"), ("MODEL",), True)
    (tmp_path / "sqlcanary.yml").write_text("agent:\n  spec: gold\n  inputs: 3\n")
    with pytest.raises(ConfigError, match="inputs"):
        load_config(tmp_path / "sqlcanary.yml")
