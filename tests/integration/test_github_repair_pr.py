"""The repair pull request's GitHub side (bot/github/repair_pr.py) against the fake GitHub, whose git data
operations write a real bare repository, and tests/support/git_http.py serving that same repository for the
`git push` fallback. What the bot wrote is read back with real git."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.github import gitpush
from bot.github.gitdata import GitDataRefused
from bot.github.gitpush import PushFallback
from bot.github.repair_change import BODY_LIMIT, RepairChange, RepairPathRefused, RepairTarget, fit_body
from bot.github.repair_pr import NO_DIFF, close_repair, publish_repair
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_git import attach_git
from tests.support.git_http import GitHttpServer
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS, client

KB = "evals/agent/kb/metrics.yml"
KB2 = "evals/agent/kb/tables.md"
GLOBS = ("evals/agent/kb/**/*.yml", "evals/agent/kb/**/*.md")
BRANCH = "sqlcanary/repair/pr-1"
BOT_EMAIL = "github-actions[bot]@users.noreply.github.com"


def git(repo: Path, *args: str, author: str = "Pat <pat@example.com>") -> str:
    name, _, email = author.partition(" <")
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email.rstrip(">"),
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email.rstrip(">"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


@dataclass
class World:
    fake: FakeGitHub
    bare: Path
    head_sha: str
    root: Path

    def target(self) -> RepairTarget:
        return RepairTarget(REPO, 1, "feature", self.head_sha)

    def change(self, files: dict[str, str], body: str = "The repair.\n") -> RepairChange:
        return RepairChange(
            self.target(),
            files,
            GLOBS,
            "sqlcanary: repair 1 regression from #1\n\n- gmv",
            "sqlcanary: repair 1 regressions from #1",
            body,
        )

    def tip(self) -> str | None:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", f"refs/heads/{BRANCH}"],
            cwd=self.bare,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip() or None

    def show(self, rev: str, path: str) -> str:
        done = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=self.bare, capture_output=True, text=True)
        return done.stdout


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A bare `acme/agent` with `main` and the PR branch `feature` (one KB edit), PR #1 from feature into main."""
    work = tmp_path / "work"
    work.mkdir()
    files = {
        KB: "gmv: sum(price)\n",
        KB2: "# tables\n",
        "evals/agent/sqlcanary.yml": "suite: ../suite\n",
        ".github/workflows/ci.yml": "on: push\n",
        "README.md": "hi\n",
    }
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    git(work, "checkout", "-qb", "feature")
    (work / KB).write_text("gmv: sum(price * 2)\n")
    git(work, "commit", "-qam", "kb: double gmv")
    head_sha = git(work, "rev-parse", "HEAD")
    root = tmp_path / "remote"
    bare = root / "acme" / "agent.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    with FakeGitHub(tokens=dict(TOKENS)) as fake:
        attach_git(fake.state, REPO, bare)
        fake.state.add_pull(fake.base_url, REPO, head="feature", head_sha=head_sha)
        yield World(fake, bare, head_sha, root)
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"


def _writes(fake: FakeGitHub, *operations: str) -> list[str]:
    return [r.operation for r in fake.writes() if not operations or r.operation in operations]


def test_the_repair_pr_is_opened_once_as_a_labelled_draft_on_the_pr_branch(world: World) -> None:
    result = publish_repair(client(world.fake), world.change({KB: "gmv: sum(price)\n"}))

    assert (result.action, result.pr_number, result.branch, result.pushed_with) == (
        "opened",
        2,
        BRANCH,
        "api",
    )
    assert result.html_url == f"{world.fake.base_url}/{REPO}/pull/2"
    [create] = world.fake.calls("pulls/create")
    assert create.body["draft"] is True
    assert (create.body["base"], create.body["head"]) == ("feature", BRANCH)
    assert create.body["body"].startswith("<!-- sqlcanary:repair:pr-1 -->")
    assert [lab["name"] for lab in world.fake.state.repo(REPO).pulls[2]["labels"]] == ["sqlcanary-repair"]
    assert len(world.fake.calls("issues/create-label")) == 1
    # one commit on the PR's head, touching the KB file only, attributed to the token's identity
    assert world.tip() == result.commit_sha
    assert git(world.bare, "rev-list", f"{world.head_sha}..{BRANCH}") == result.commit_sha
    assert git(world.bare, "rev-parse", f"{BRANCH}^@") == world.head_sha
    assert git(world.bare, "diff", "--name-only", world.head_sha, BRANCH) == KB
    assert world.show(BRANCH, KB) == "gmv: sum(price)\n"
    assert git(world.bare, "log", "-1", "--format=%ae", BRANCH).endswith(BOT_EMAIL)
    assert git(world.bare, "log", "-1", "--format=%B", BRANCH).startswith("sqlcanary: repair 1 regression")


def test_a_second_run_with_the_same_files_changes_nothing(world: World) -> None:
    gh = client(world.fake)
    first = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}))
    before = len(world.fake.requests)

    second = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}))

    assert (second.action, second.pr_number, second.commit_sha, second.pushed_with) == (
        "unchanged",
        first.pr_number,
        first.commit_sha,
        "",
    )
    later = world.fake.requests[before:]
    ops = {r.operation for r in later if r.is_write}
    assert not ops & {"git/create-ref", "git/update-ref", "pulls/create", "pulls/update", "issues/add-labels"}
    assert world.tip() == first.commit_sha
    assert len(world.fake.state.repo(REPO).pulls) == 2


def test_other_files_force_update_the_branch_and_edit_the_body(world: World) -> None:
    gh = client(world.fake)
    first = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}, body="first\n"))

    second = publish_repair(
        gh, world.change({KB: "gmv: sum(price)\n", KB2: "# tables\norders\n"}, body="second\n")
    )

    assert (second.action, second.pr_number, second.pushed_with) == ("updated", first.pr_number, "api")
    [update] = world.fake.calls("git/update-ref")
    assert update.body == {"sha": second.commit_sha, "force": True}
    assert (
        git(world.bare, "rev-list", f"{world.head_sha}..{BRANCH}") == second.commit_sha
    )  # rebuilt: one commit
    assert git(world.bare, "diff", "--name-only", world.head_sha, BRANCH).split() == [KB, KB2]
    [edit] = world.fake.calls("pulls/update")
    assert edit.body == {"body": "<!-- sqlcanary:repair:pr-1 -->\nsecond\n"}  # the title did not change
    assert len(world.fake.calls("pulls/create")) == 1


def test_the_pr_is_closed_with_a_comment_when_told_and_its_branch_deleted(world: World) -> None:
    gh = client(world.fake)
    opened = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}))

    closed = close_repair(gh, world.target(), "the source pull request no longer regresses")

    assert (closed.action, closed.pr_number) == ("closed", opened.pr_number)
    pull = world.fake.state.repo(REPO).pulls[2]
    assert pull["state"] == "closed"
    [comment] = world.fake.calls("issues/create-comment")
    assert "no longer regresses" in comment.body["body"]
    assert world.tip() is None
    assert close_repair(gh, world.target(), "still nothing").action == "skipped"  # nothing open: nothing done


def test_a_repair_with_no_diff_left_closes_the_pr(world: World) -> None:
    gh = client(world.fake)
    publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}))

    result = publish_repair(gh, world.change({KB: "gmv: sum(price * 2)\n"}))  # what the PR head already holds

    assert (result.action, result.reason) == ("closed", NO_DIFF)
    assert world.fake.state.repo(REPO).pulls[2]["state"] == "closed"
    assert world.tip() is None


def test_after_a_persons_commit_the_branch_and_pr_are_left_alone(world: World, tmp_path: Path) -> None:
    gh = client(world.fake)
    opened = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}, body="first\n"))
    clone = tmp_path / "person"
    git(tmp_path, "clone", "-q", "--branch", BRANCH, str(world.bare), str(clone))
    (clone / KB2).write_text("# tables\nmy own fix\n")
    git(clone, "commit", "-qam", "a person's fix")
    git(clone, "push", "-q", "origin", BRANCH)
    person_tip = world.tip()
    before = len(world.fake.requests)

    result = publish_repair(gh, world.change({KB: "gmv: sum(price + 1)\n"}, body="second\n"))
    closing = close_repair(gh, world.target(), "the source pull request no longer regresses")

    assert (result.action, result.pr_number, result.html_url) == (
        "handed_off",
        opened.pr_number,
        opened.html_url,
    )
    assert "a person pushed" in result.reason and "pat@example.com" in result.reason
    assert closing.action == "handed_off"
    assert [r for r in world.fake.requests[before:] if r.is_write] == []  # no ref, PR, label or comment write
    assert world.tip() == person_tip
    assert world.fake.state.repo(REPO).pulls[2]["state"] == "open"


def test_the_bots_commit_on_an_older_pr_head_is_rebuilt_not_handed_off(world: World, tmp_path: Path) -> None:
    """The source PR was force-pushed: its old commits (by its author) lie under the bot's commit."""
    gh = client(world.fake)
    publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}))
    clone = tmp_path / "author"
    git(tmp_path, "clone", "-q", "--branch", "main", str(world.bare), str(clone))
    git(clone, "checkout", "-qb", "feature")
    (clone / KB).write_text("gmv: sum(price * 3)\n")
    git(clone, "commit", "-qam", "kb: triple gmv (rebased)")
    git(clone, "push", "-qf", "origin", "feature")
    new_head = git(clone, "rev-parse", "HEAD")

    target = RepairTarget(REPO, 1, "feature", new_head)
    change = RepairChange(
        target,
        {KB: "gmv: sum(price)\n"},
        GLOBS,
        "repair",
        "sqlcanary: repair 1 regressions from #1",
        "The repair.\n",
    )
    result = publish_repair(gh, change)

    assert result.action == "updated"
    assert git(world.bare, "rev-parse", f"{BRANCH}^@") == new_head


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows/x.yml",
        "evals/agent/kb/../../../.github/x.yml",
        "/etc/passwd",
        "evals/agent/agent.py",
        "evals/agent/kb/.git/config",
        "evals\\agent\\kb\\x.yml",
    ],
)
def test_a_path_outside_the_rule_is_refused_before_any_request(world: World, path: str) -> None:
    refs = git(world.bare, "for-each-ref")
    with pytest.raises(RepairPathRefused, match="KB files only"):
        publish_repair(client(world.fake), world.change({KB: "gmv: 1\n", path: "on: push\n"}))
    assert world.fake.requests == []
    assert git(world.bare, "for-each-ref") == refs


def test_a_callable_rule_is_asked_and_publish_checks_the_paths_once_more(world: World) -> None:
    def rule(path: str) -> str | None:
        return None if path == KB else f"{path}: not in kb.paths"

    with pytest.raises(RepairPathRefused, match="tables.md: not in kb.paths"):
        RepairChange(world.target(), {KB2: "x"}, rule, "m", "t", "b")
    change = RepairChange(world.target(), {KB: "x\n"}, rule, "m", "t", "b")
    object.__setattr__(change, "files", {".github/workflows/x.yml": "on: push\n"})  # tampered after the check
    with pytest.raises(RepairPathRefused, match=r"\.github/"):
        publish_repair(client(world.fake), change)
    assert world.fake.requests == []


def test_no_token_in_any_request_commit_or_body(world: World) -> None:
    gh = client(world.fake)
    publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}))
    publish_repair(gh, world.change({KB: "gmv: sum(price) -- v2\n"}))
    close_repair(gh, world.target(), "the source pull request no longer regresses")

    for token in TOKENS:
        assert world.fake.leaks(token) == []
    everything = git(world.bare, "log", "--all", "-p", "--format=%H%n%an %ae%n%B")
    assert ACTIONS_TOKEN not in everything
    assert all(ACTIONS_TOKEN not in p["body"] for p in world.fake.state.repo(REPO).pulls.values())


def test_the_body_is_never_sent_over_githubs_limit() -> None:
    marker = "<!-- sqlcanary:repair:pr-7 -->"
    body = fit_body("x" * 70_000 + marker, marker)
    assert len(body) <= BODY_LIMIT and body.startswith(marker)
    assert fit_body("short", marker) == f"{marker}\nshort"


def test_without_a_fallback_a_refused_git_data_api_is_an_error(world: World) -> None:
    world.fake.fail("git/create-blob", 403, times=None)
    with pytest.raises(GitDataRefused, match="HTTP 403"):
        publish_repair(client(world.fake), world.change({KB: "gmv: sum(price)\n"}))
    assert world.tip() is None and _writes(world.fake, "pulls/create") == []


@pytest.mark.parametrize("depth", ["shallow", "full"])
def test_the_push_fallback_writes_the_branch_over_git_http(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: str
) -> None:
    """A merge checkout at depth 1 lacks the PR head (it is fetched); a full clone has it."""
    workspace = tmp_path / "workspace"
    clone_args = ["--depth=1", f"file://{world.bare}"] if depth == "shallow" else [str(world.bare)]
    git(tmp_path, "clone", "-q", *clone_args, str(workspace))
    world.fake.fail("git/create-commit", 403, times=None)
    argvs: list[str] = []
    real_run = subprocess.run

    def spy(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        argvs.append(" ".join(args))
        return real_run(args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(gitpush.subprocess, "run", spy)
    head_before, status_before = git(workspace, "rev-parse", "HEAD"), git(workspace, "status", "--porcelain")
    # git http-backend serves pushes to no anonymous user
    git(world.bare, "config", "http.receivepack", "true")
    with GitHttpServer(world.root, token=ACTIONS_TOKEN) as server:
        git(workspace, "remote", "set-url", "origin", server.url(REPO))
        fallback = PushFallback(workspace, ACTIONS_TOKEN)
        gh = client(world.fake)
        result = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}), fallback=fallback)
        pushes = len([r for r in server.requests if "receive-pack" in r.path])
        again = publish_repair(gh, world.change({KB: "gmv: sum(price)\n"}), fallback=fallback)

    assert (result.action, result.pushed_with, result.pr_number) == ("opened", "git", 2)
    assert git(world.bare, "rev-parse", f"{BRANCH}^@") == world.head_sha
    assert git(world.bare, "diff", "--name-only", world.head_sha, BRANCH) == KB
    assert (
        git(world.bare, "log", "-1", "--format=%an <%ae>", BRANCH)
        == f"github-actions[bot] <41898282+{BOT_EMAIL}>"
    )
    assert (again.action, again.pushed_with) == ("unchanged", "")
    assert (
        len([r for r in server.requests if "receive-pack" in r.path]) == pushes
    )  # the second run pushed nothing
    assert server.requests and all(r.authorized for r in server.requests)
    # the checkout is left as found, and the token is in no URL, file or command line
    assert (git(workspace, "rev-parse", "HEAD"), git(workspace, "status", "--porcelain")) == (
        head_before,
        status_before,
    )
    basic = base64.b64encode(f"x-access-token:{ACTIONS_TOKEN}".encode()).decode()
    assert argvs and not [a for a in argvs if ACTIONS_TOKEN in a or basic in a]
    stored = subprocess.run(
        ["grep", "-rl", ACTIONS_TOKEN, str(workspace / ".git"), str(world.bare)],
        capture_output=True,
        text=True,
    )
    assert stored.stdout == ""
    assert world.fake.leaks(ACTIONS_TOKEN) == []
