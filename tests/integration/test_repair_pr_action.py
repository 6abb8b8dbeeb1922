"""The repair pull request end to end through `action(...)`: input `repair: true` on a same-repository pull
request whose KB change breaks cases. The fake GitHub's git data operations write the real bare remote the
checkout was cloned from; the agent is a real `command:` process reading the KB (tests/fixtures/attribution); no
LLM is configured, so the repair is the verified partial revert of the hunk that broke the cases."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_action import pr_action
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_git import attach_git
from tests.support.fake_openai import FakeOpenAI
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS
from tests.support.github_runner_files import parse_outputs
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
FOLDER = "analytics"
CONFIG = f"{FOLDER}/sqlcanary.yml"
BRANCH = "sqlcanary/repair/pr-1"


@pytest.fixture
def world(tmp_path: Path, monkeypatch):
    """`main` (the fixture tree) and `feature` (three KB hunks, one of which breaks cases) on a bare remote."""
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "tree", src / FOLDER)
    config = src / CONFIG
    config.write_text(
        config.read_text().replace("command:PYTHON agent.py", f"command:{sys.executable} agent.py")
    )
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "base")
    main_sha = git(src, "rev-parse", "HEAD")
    git(src, "checkout", "-q", "-b", "feature")
    shutil.copytree(FIXTURES / "prs" / "three_hunks" / "kb", src / FOLDER / "kb", dirs_exist_ok=True)
    git(src, "commit", "-qam", "kb: three hunks")
    bare = tmp_path / "remote" / "acme" / "agent.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(src, "push", "-q", str(bare), "main", "feature")
    with FakeGitHub(tokens=dict(TOKENS)) as fake:
        attach_git(fake.state, REPO, bare)
        yield {"src": src, "bare": bare, "main": main_sha, "fake": fake, "tmp": tmp_path}
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"


def head(world: dict, branch: str = "feature") -> str:
    return git(world["src"], "rev-parse", branch)


def check(
    world: dict, capsys, name: str, *, fork: bool = False, author: str = "alice", **inputs: str
) -> tuple[int, dict]:
    sha = head(world)
    shas = {"main": world["main"], "regress": sha, "url": world["bare"].as_uri()}
    rc, workspace = pr_action(
        world["tmp"] / name,
        world["fake"],
        shas,
        branch="feature",
        capsys=capsys,
        fork=fork,
        author=author,
        config=CONFIG,
        repair="true",
        **inputs,
    )
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", FOLDER],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    outputs = parse_outputs(world["tmp"] / name / "output.txt")
    return rc, {"outputs": outputs, "workspace": workspace, "status": status}


def pulls(fake: FakeGitHub) -> list[dict]:
    return [p for p in fake.state.repo(REPO).pulls.values() if p["head"]["ref"] == BRANCH]


def branch_files(bare: Path) -> list[str]:
    out = subprocess.run(
        ["git", "diff", "--name-only", f"feature...{BRANCH}"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_a_regressing_pr_gets_one_draft_repair_pr_with_the_partial_revert(world, capsys):
    rc, first = check(world, capsys, "first")
    assert rc == 1  # the step still exits with the gate's code
    [pr] = pulls(world["fake"])
    assert pr["draft"] and pr["base"]["ref"] == "feature" and pr["state"] == "open"
    assert "sqlcanary-repair" in [label["name"] for label in pr["labels"]]
    assert pr["title"].startswith("sqlcanary: repair ") and pr["title"].endswith("from #1")
    assert branch_files(world["bare"]) == [f"{FOLDER}/kb/metrics.yaml"]  # KB files only, the breaking hunk
    parent = git(world["bare"], "rev-parse", f"{BRANCH}^")
    assert parent == head(world)  # stacked on the event's head sha
    assert "<!-- sqlcanary:repair:pr-1 -->" in pr["body"]
    outputs = first["outputs"]
    assert outputs["repair-pr-number"] == str(pr["number"]) and outputs["repair-pr-url"] == pr["html_url"]
    assert outputs["repaired"] and not outputs["still-failing"]
    assert first["status"] == ""  # the checkout is left as it was found
    comment = next(iter(world["fake"].state.repo(REPO).comments.values()))["body"]
    assert f"#{pr['number']}" in comment

    rc, second = check(world, capsys, "second")
    assert rc == 1 and len(pulls(world["fake"])) == 1  # found again by branch and marker, never duplicated
    assert second["outputs"]["repair-pr-number"] == str(pr["number"])


def test_the_repair_pr_is_closed_when_the_pr_no_longer_regresses(world, capsys):
    check(world, capsys, "regressing")
    src = world["src"]
    git(src, "checkout", "-q", "feature")
    shutil.copytree(FIXTURES / "tree" / "kb", src / FOLDER / "kb", dirs_exist_ok=True)  # the author reverts
    git(src, "commit", "-qam", "kb: back")
    git(src, "push", "-q", str(world["bare"]), "feature")
    git(src, "checkout", "-q", "main")
    rc, fixed = check(world, capsys, "fixed")
    assert rc == 0
    [pr] = pulls(world["fake"])
    assert pr["state"] == "closed"
    assert fixed["outputs"]["repair-pr-number"] == ""


def test_after_a_persons_commit_on_the_repair_branch_sqlcanary_leaves_it_alone(world, capsys):
    check(world, capsys, "opened")
    fake: FakeGitHub = world["fake"]
    work = world["tmp"] / "person"
    git(world["tmp"], "clone", "-q", "--branch", BRANCH, str(world["bare"]), str(work))
    (work / FOLDER / "kb" / "notes.md").write_text("# a person's note\n")
    git(work, "add", "-A")
    subprocess.run(
        ["git", "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-qm", "mine"],
        cwd=work,
        check=True,
    )
    git(work, "push", "-q", "origin", BRANCH)
    tip = git(world["bare"], "rev-parse", BRANCH)
    [before] = pulls(fake)
    writes = len(fake.writes())
    rc, _ = check(world, capsys, "handed-off")
    assert rc == 1
    assert git(world["bare"], "rev-parse", BRANCH) == tip  # no further push
    [after] = pulls(fake)
    assert (after["title"], after["body"], after["state"]) == (
        before["title"],
        before["body"],
        before["state"],
    )
    new = [r.operation for r in fake.writes()[writes:]]
    assert not any(op.startswith(("git/", "pulls/")) for op in new), new
    comment = next(iter(fake.state.repo(REPO).comments.values()))["body"]
    assert "a person edited the repair branch" in comment


@pytest.mark.parametrize("who", ["fork", "dependabot"])
def test_a_fork_or_dependabot_pull_request_gets_no_repair_branch_no_request_and_no_llm_call(
    world, capsys, who
):
    with FakeOpenAI([PERFECT]) as llm:
        rc, result = check(
            world,
            capsys,
            who,
            fork=who == "fork",
            author="dependabot[bot]" if who == "dependabot" else "alice",
            openai_base_url=llm.base_url,
            openai_api_key=KEY,
            model="m",
        )
        assert llm.requests == []
    assert rc == 1
    assert pulls(world["fake"]) == [] and world["fake"].writes() == []
    assert subprocess.run(["git", "rev-parse", "--verify", "-q", BRANCH], cwd=world["bare"]).returncode != 0
    assert result["outputs"]["repair-pr-number"] == ""


def plan(*actions: dict) -> str:
    return json.dumps(
        {
            "status": "updated",
            "issues_found": ["revenue averages the amounts"],
            "improvements_made": ["revenue sums the amounts again"],
            "actions": list(actions),
            "reasoning": "revenue is a total",
        }
    )


FIX = plan(
    {
        "type": "edit_metric",
        "file": "kb/metrics.yaml",
        "edits": [{"search": "SELECT avg(amount) FROM orders", "replace": "SELECT sum(amount) FROM orders"}],
    }
)
PERFECT = json.dumps({"status": "perfect", "issues_found": [], "improvements_made": [], "actions": []})
KEY = "sk-test-repair-0123456789abcdef"


def test_with_an_llm_the_repair_pr_holds_its_verified_edit_and_the_body_says_so(world, capsys, monkeypatch):
    from bot.repair.loop import RepairLoop
    from bot.report.repair_pr import parse_repair_data

    def not_here(*args, **kwargs):
        raise AssertionError("the repair loop ran in the process that holds the GitHub token")

    # The loop runs in a child of its own (bot.check.repair_child): in this process, it would fail.
    monkeypatch.setattr(RepairLoop, "__init__", not_here)
    with FakeOpenAI([FIX, PERFECT]) as llm:
        rc, result = check(world, capsys, "llm", openai_base_url=llm.base_url, openai_api_key=KEY, model="m")
        assert llm.completions  # the LLM was asked
    assert rc == 1
    [pr] = pulls(world["fake"])
    data = parse_repair_data(pr["body"])
    assert data is not None and data["fixed_by"] == "llm_edit"
    outcome = json.loads((result["workspace"] / "sqlcanary-results/repair/outcome.json").read_text())
    assert data["pass_rates"]["repaired"] == pytest.approx(outcome["repaired_pass_rate"])
    assert data["pass_rates"]["head"] == pytest.approx(outcome["head_pass_rate"])
    text = git(world["bare"], "show", f"{BRANCH}:{FOLDER}/kb/metrics.yaml")
    assert "revenue: SELECT sum(amount) FROM orders" in text
    assert "# the shop's metrics" in text  # the pull request's own change is kept
    assert result["status"] == ""  # the checkout is put back
    fake: FakeGitHub = world["fake"]
    assert fake.leaks(KEY) == [] and fake.leaks(ACTIONS_TOKEN) == []
    assert KEY not in pr["body"] and KEY not in capsys.readouterr().out


def test_a_repair_that_would_write_outside_the_kb_reaches_nothing(world, capsys):
    """The LLM's plan for `.github/workflows/x.yml` is refused by the loop; no branch, no pull request."""
    bad = plan({"type": "add_file", "file": "../.github/workflows/x.yml", "content": "on: push\n"})
    with FakeOpenAI([bad]) as llm:
        rc, result = check(
            world, capsys, "outside", openai_base_url=llm.base_url, openai_api_key=KEY, model="m"
        )
    assert rc == 1
    assert subprocess.run(["git", "grep", "-q", "on: push", BRANCH], cwd=world["bare"]).returncode != 0
    assert not (result["workspace"] / ".github").exists()
