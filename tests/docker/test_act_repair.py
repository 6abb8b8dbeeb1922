"""The repair pull request through the runner path: act runs a `pull_request` workflow whose step is `uses: ./`
with `repair: true` in the image built from this repository's Dockerfile (how act is run offline, and why:
test_act.py, whose helpers this module reuses).

The repository is tests/fixtures/attribution under `analytics/`: a per-case `command:` agent answering from the KB
lines `name: SQL`, and a pull request (`regress`) whose KB change holds three hunks of which only the one on
`revenue:` breaks cases. No LLM is configured, so the repair is the verified partial revert of that hunk. The
working directory act copies into the job is a depth-1 clone of the pull request's head (the action fetches the
base through the git smart-HTTP server); the fake GitHub's git data API (blobs, trees, commits, refs) writes the
same bare repository from the test's process, so the container needs only HTTP to it (`--network host`).

The agent is the same at the base and the head (the pull request changes only the KB): every time it is started
it probes its sandbox as test_act.py's agent does (PROBE), answers only when it runs as a sandbox uid that cannot
read its ancestors' environment nor write the runner's command files, and shows what it found in its SQL for
`revenue` (which the sticky comment quotes). The repair's own runs of the agent (attribution, verification) are
therefore sandboxed too, or the partial revert would not hold and no repair pull request would open."""

from __future__ import annotations

import json
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_git import attach_git
from tests.support.git_http import GitHttpServer
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS
from tests.support.tinyrepo import git

from .conftest import docker
from .test_act import PROBE, Act, ActRun, _copy_action, _event, _has_commit, _link_tree

pytestmark = pytest.mark.docker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
FOLDER = "analytics"
KB_FILE = f"{FOLDER}/kb/metrics.yaml"
PR_BRANCH = "regress"  # the head branch test_act.py's `_event` names
REPAIR_BRANCH = "sqlcanary/repair/pr-1"
WORKFLOW_NAME = (
    f"sqlcanary-repair-{secrets.token_hex(4)}"  # act's containers are named after it (test_act.py)
)
WORKFLOW = """\
name: {name}
on: pull_request
permissions:
  contents: write
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
          repair: true
      - name: read the repair outputs
        if: always()
        env:
          VERDICT: ${{{{ steps.canary.outputs.verdict }}}}
          REPAIR_PR: ${{{{ steps.canary.outputs.repair-pr-number }}}}
          REPAIR_URL: ${{{{ steps.canary.outputs.repair-pr-url }}}}
          REPAIRED: ${{{{ steps.canary.outputs.repaired }}}}
          STILL_FAILING: ${{{{ steps.canary.outputs.still-failing }}}}
        run: >-
          echo "later step read verdict=$VERDICT repair-pr-number=$REPAIR_PR repair-pr-url=$REPAIR_URL
          repaired=$REPAIRED still-failing=$STILL_FAILING end"
"""
LATER = (
    r"later step read verdict=(\S*) repair-pr-number=(\S*) repair-pr-url=(\S*) "
    r"repaired=(\S*) still-failing=(\S*) end"
)
# Inserted after the agent reads its request: PROBE defines `_probe()` (its own `if` names a case this suite does
# not have); the agent refuses to answer anywhere but in the sandbox. `_probe()` walks the ancestors below pid 1,
# and the repair's runs of the agent are children of the action itself, pid 1 of its container: its environment
# (the token) and the parent's are tried here too.
GUARD = (
    PROBE
    + """\
import os
def _environ_refused(pid):
    try:
        open(f"/proc/{pid}/environ", "rb").read()
    except PermissionError:
        return True
    return False
probe = _probe()
facts = probe.split()
if (
    facts[0] != "uid=sandbox"
    or any(f.startswith("environ=") and "read" in f[8:].split(",") for f in facts)
    or any(f.startswith("wrote=") for f in facts)
    or not (_environ_refused(1) and _environ_refused(os.getppid()))
):
    print(json.dumps({"error": "not sandboxed: " + probe}))
    sys.exit(0)
"""
)


def _agent(text: str) -> str:
    read, answer = "request = json.load(sys.stdin)\n", '"sql": sql.strip(),'
    assert read in text and answer in text, "tests/fixtures/attribution/tree/agent.py changed: adapt GUARD"
    shown = '"sql": sql.strip() + (" -- probe " + probe if request["id"] == "revenue" else ""),'
    return text.replace(read, read + GUARD).replace(answer, shown)


def _repository(root: Path) -> tuple[Path, str, str]:
    """A bare repository `acme/agent` under `root/served`: `main` (the action, the workflow, the attribution
    tree with its probing agent; `buyers` fails there already) and `regress` (the three KB hunks)."""
    src = root / "src"
    src.mkdir()
    _copy_action(src)
    (src / ".github" / "workflows").mkdir(parents=True)
    config = f"{FOLDER}/sqlcanary.yml"
    (src / ".github" / "workflows" / "pr.yml").write_text(WORKFLOW.format(name=WORKFLOW_NAME, config=config))
    shutil.copytree(FIXTURES / "tree", src / FOLDER)
    (src / config).write_text((src / config).read_text().replace("command:PYTHON ", "command:python3 "))
    agent = src / FOLDER / "agent.py"
    agent.write_text(_agent(agent.read_text()))
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "base")
    base_sha = git(src, "rev-parse", "HEAD")
    shutil.copytree(FIXTURES / "prs" / "three_hunks" / "kb", src / FOLDER / "kb", dirs_exist_ok=True)
    git(src, "commit", "-qam", "kb: three hunks")
    head_sha = git(src, "rev-parse", "HEAD")
    bare = root / "served" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(root, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(src, "push", "-q", str(bare), f"{base_sha}:refs/heads/main", f"{head_sha}:refs/heads/{PR_BRANCH}")
    return bare, base_sha, head_sha


@dataclass(frozen=True)
class Outcome:
    fake: FakeGitHub
    git_server: GitHttpServer
    bare: Path
    base_sha: str
    head_sha: str
    had_base: bool
    run: ActRun

    def step_log(self) -> str:
        return "\n".join(str(line.get("msg", "")).rstrip() for line in self.run.step("./"))

    def repair_pulls(self) -> list[dict]:
        pulls = self.fake.state.repo(REPO).pulls.values()
        return [p for p in pulls if p["head"]["ref"] == REPAIR_BRANCH]


@pytest.fixture(scope="module")
def repaired(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path, act_binary: str):
    """The fake GitHub backed by the bare repository, the git server on the same repository, the working
    directory (a depth-1 clone of the head whose origin is the git server), the event; act run once."""
    root = tmp_path_factory.mktemp("act-repair")
    bare, base_sha, head_sha = _repository(root)
    with (
        FakeGitHub(tokens=dict(TOKENS)) as fake,
        GitHttpServer(bare.parents[1], token=ACTIONS_TOKEN) as git_server,
    ):
        attach_git(fake.state, REPO, bare)
        fake.state.add_pull(fake.base_url, REPO, head=PR_BRANCH, head_sha=head_sha, base_sha=base_sha)
        workdir = root / "agent"
        git(root, "clone", "-q", "--depth", "1", "--branch", PR_BRANCH, bare.as_uri(), str(workdir))
        git(workdir, "remote", "set-url", "origin", git_server.url(REPO))
        _link_tree(wheelhouse, workdir / ".wheelhouse")
        event = root / "event.json"
        event.write_text(json.dumps(_event(base_sha, head_sha)))
        had_base = _has_commit(workdir, base_sha)
        act = Act(
            act_binary, workdir=workdir, event=event, home=root / "home", fake=fake, git_server=git_server
        )
        yield Outcome(fake, git_server, bare, base_sha, head_sha, had_base, act.run())
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"


def test_the_gate_fails_the_step_and_a_later_step_reads_the_repair_outputs(repaired: Outcome) -> None:
    run = repaired.run
    assert run.code != 0, run.text[-6000:]
    assert run.said(r"Failure - Main \./"), run.text[-6000:]  # the step exits with the gate's code
    later = run.said(LATER)
    assert later, run.text[-6000:]
    verdict, number, url, fixed, still = later.groups()
    pulls = repaired.repair_pulls()
    assert len(pulls) == 1, repaired.step_log()
    [pr] = pulls
    assert verdict == "regressions"
    assert number == str(pr["number"]) and url == pr["html_url"]
    assert sorted(fixed.split(",")) == ["revenue", "revenue-total"] and still == ""


def test_exactly_one_draft_repair_pr_based_on_the_pr_branch_and_labelled(repaired: Outcome) -> None:
    [pr] = repaired.repair_pulls()
    assert pr["draft"] and pr["state"] == "open", pr
    assert pr["base"]["ref"] == PR_BRANCH and pr["head"]["ref"] == REPAIR_BRANCH
    assert "sqlcanary-repair" in [label["name"] for label in pr["labels"]]
    assert pr["title"].startswith("sqlcanary: repair ") and pr["title"].endswith(" from #1"), pr["title"]
    assert "<!-- sqlcanary:repair:pr-1 -->" in pr["body"]
    assert len(repaired.fake.calls("pulls/create")) == 1
    comments = list(repaired.fake.state.repo(REPO).comments.values())
    sticky = [c for c in comments if c["body"].count("<!-- sqlcanary:comment:")]
    assert len(sticky) == 1 and f"#{pr['number']}" in sticky[0]["body"]  # the source PR links its repair


def test_the_repair_branch_holds_one_commit_on_the_head_changing_only_the_kb_file(repaired: Outcome) -> None:
    bare = repaired.bare
    commits = git(bare, "rev-list", "--parents", f"{repaired.head_sha}..{REPAIR_BRANCH}").splitlines()
    [commit] = commits  # one commit on the pull request's head, with one parent: the head
    assert commit.split()[1:] == [repaired.head_sha], commits
    changed = git(bare, "diff", "--name-only", repaired.head_sha, REPAIR_BRANCH).split()
    assert changed == [KB_FILE]
    text = git(bare, "show", f"{REPAIR_BRANCH}:{KB_FILE}")
    assert "revenue: SELECT sum(amount) FROM orders" in text  # the hunk that broke the cases, reverted
    assert "# the shop's metrics" in text  # the pull request's harmless hunks kept
    message = git(bare, "log", "-1", "--format=%B", REPAIR_BRANCH)
    assert "- fixes revenue\n" in message and "- fixes revenue-total" in message, message
    # written through the REST git data API from the test's process, not by `git push` from the container
    assert len(repaired.fake.calls("git/create-commit")) == 1
    assert not any("receive-pack" in r.path for r in repaired.git_server.requests)


def test_the_action_fetched_the_base_into_its_depth_one_checkout(repaired: Outcome) -> None:
    assert not repaired.had_base
    requests = repaired.git_server.requests
    assert any(r.method == "POST" and r.path == f"/{REPO}.git/git-upload-pack" for r in requests), requests
    assert all(r.authorized for r in requests)


def test_the_agent_ran_sandboxed_inside_the_image(repaired: Outcome) -> None:
    [sticky] = [
        c["body"]
        for c in repaired.fake.state.repo(REPO).comments.values()
        if "sqlcanary:comment:" in c["body"]
    ]
    probe = re.search(r"probe (uid=\w+[^`\n]*)", sticky)
    assert probe, sticky[-3000:]
    facts = probe.group(1).split()
    assert facts[0] == "uid=sandbox" and "environ=PermissionError" in facts, probe.group(0)
    assert not any(f.startswith("wrote=") for f in facts), probe.group(0)
    assert "not sandboxed" not in sticky


def test_no_token_reaches_github_the_repair_or_the_log(repaired: Outcome) -> None:
    assert repaired.fake.leaks(ACTIONS_TOKEN) == []
    [pr] = repaired.repair_pulls()
    assert ACTIONS_TOKEN not in pr["body"] + pr["title"]
    history = git(repaired.bare, "log", "-p", "--all")
    assert ACTIONS_TOKEN not in history
    shown = [line for line in repaired.run.lines if line.get("command") != "add-mask"]  # see test_act.py
    assert ACTIONS_TOKEN not in json.dumps(shown) + repaired.run.stderr


def test_act_leaves_no_container_or_volume_behind(repaired: Outcome) -> None:
    prefix = f"act-{WORKFLOW_NAME}-eval"
    containers = docker("ps", "-a", "--format", "{{.Names}}", "--filter", f"name={prefix}", check=True).stdout
    volumes = docker("volume", "ls", "--format", "{{.Name}}", "--filter", f"name={prefix}", check=True).stdout
    assert containers.split() == [] and volumes.split() == []
