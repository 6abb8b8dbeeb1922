"""Publish a repair: the branch `sqlcanary/repair/pr-<n>` (one commit on the source pull request's head, rebuilt
on every run) and its draft pull request, or close it when there is nothing left to repair.

    result = publish_repair(github, change, login=login, fallback=PushFallback(workspace, token))
    result = close_repair(github, target, "the pull request no longer regresses", login=login)

Renovate's hand-off: once a commit by anyone but the bot sits on the repair branch (or the open pull request from
it is not the bot's), nothing is written to the branch or the pull request again, and the result says so. The
paths are checked once more before any request; nothing else is read from the environment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from github import Github
from github.Repository import Repository

from bot.github import gitdata
from bot.github.client import get_repository, resolve_login
from bot.github.gitdata import Author, BranchMoved, CommitInfo, GitDataRefused
from bot.github.gitpush import LocalBranch, PushFallback, PushRejected, bot_identity
from bot.github.repair_change import RepairChange, RepairTarget, check_paths
from bot.github.repair_pull import FoundPull, close_pull, edit_pull, ensure_label, find_pull, open_pull

Pushed = Literal["api", "git", ""]  # how the branch was written this run ("": it was not)
Action = Literal["opened", "updated", "unchanged", "closed", "handed_off", "skipped"]
NO_DIFF = "the repair has no diff left on the pull request's head"


@dataclass(frozen=True)
class RepairResult:
    """What happened, for the outputs `repair-pr-number`, `repair-pr-url` and the sticky comment."""

    action: Action
    branch: str
    reason: str = ""
    pr_number: int | None = None
    html_url: str | None = None
    commit_sha: str | None = None
    pushed_with: Pushed = ""  # how the branch was written this run ("": it was not)


@dataclass(frozen=True)
class _Remote:
    """The repair branch and pull request as found, and whether a person took them over."""

    tip: str | None
    found: FoundPull | None
    handed_off: str  # why sqlcanary leaves them alone ("": it does not)

    def result(
        self, target: RepairTarget, action: Action, reason: str, *, with_tip: bool = True
    ) -> RepairResult:
        pull = self.found.pull if self.found else None
        number, url = (pull.number, pull.html_url) if pull else (None, None)
        return RepairResult(action, target.branch, reason, number, url, self.tip if with_tip else None)


def _is_ours(login: str) -> Callable[[Author], bool]:
    identity = bot_identity(login)

    def check(author: Author) -> bool:
        email = author.email.lower()
        return (
            author.login == login
            or gitdata.noreply_login(email) == login.lower()
            or email == identity.email.lower()
        )

    return check


def _read(repo: Repository, target: RepairTarget, login: str) -> _Remote:
    tip = gitdata.branch_tip(repo, target.branch)
    foreign = gitdata.foreign_commits(repo, target.head_sha, tip, _is_ours(login)) if tip else []
    found = find_pull(repo, target, login)
    why = ""
    if foreign:
        why = (
            f"a person pushed to {target.branch} ({', '.join(foreign[:3])}): sqlcanary no longer writes to the "
            "branch or edits its pull request"
        )
    elif found is not None and not found.ours:
        why = (
            f"the open pull request #{found.pull.number} from {target.branch} was not opened by sqlcanary or "
            "lost its marker: sqlcanary leaves it alone"
        )
    return _Remote(tip, found, why)


def publish_repair(
    github: Github, change: RepairChange, *, login: str | None = None, fallback: PushFallback | None = None
) -> RepairResult:
    """Write the repair branch and open or update its draft pull request (see the module's docstring).

    `login` is who the token writes as (default: GET /user, or github-actions[bot]); give `<app-slug>[bot]` for
    an App installation token. `fallback` pushes with git when the git data API refuses; without it a refusal
    is raised (GitDataRefused)."""
    target = change.target
    check_paths(change.files, change.allowed)  # once more, before anything is written remotely
    body = change.pull_body
    repo = get_repository(github, target.repository)
    login = login or resolve_login(github)
    remote = _read(repo, target, login)
    if remote.handed_off:
        return remote.result(target, "handed_off", remote.handed_off)
    head = gitdata.commit_info(repo, target.head_sha)
    try:
        try:
            written = _write_with_api(repo, change, head, remote.tip)
        except GitDataRefused:
            if fallback is None:
                raise
            written = _write_with_git(fallback, change, head, remote.tip, login, _tip_info(repo, remote.tip))
    except (PushRejected, BranchMoved) as exc:  # someone wrote the branch between our read and our write
        return remote.result(target, "skipped", f"{exc}; the next run looks again")
    if written is None:
        return _retire(repo, target, remote, NO_DIFF)
    sha, pushed_with = written
    if remote.found is None:
        pull = open_pull(repo, target, change.title, body)
        return RepairResult("opened", target.branch, "", pull.number, pull.html_url, sha, pushed_with)
    pull = remote.found.pull
    edited = edit_pull(pull, change.title, body)
    labelled = ensure_label(repo, pull)
    action: Action = "updated" if pushed_with or edited or labelled else "unchanged"
    return RepairResult(action, target.branch, "", pull.number, pull.html_url, sha, pushed_with)


def close_repair(
    github: Github, target: RepairTarget, reason: str, *, login: str | None = None
) -> RepairResult:
    """Nothing is left to repair (`reason` says why): close the bot's repair pull request with a comment and
    delete its branch; a handed-off one is left as it is."""
    repo = get_repository(github, target.repository)
    remote = _read(repo, target, login or resolve_login(github))
    if remote.handed_off:
        return remote.result(target, "handed_off", remote.handed_off)
    return _retire(repo, target, remote, reason)


def _retire(repo: Repository, target: RepairTarget, remote: _Remote, reason: str) -> RepairResult:
    if remote.found is not None:
        close_pull(remote.found.pull, reason)
    if remote.tip is not None:
        gitdata.delete_branch(repo, target.branch)
    if remote.found is None:
        return RepairResult("skipped", target.branch, f"{reason}; no repair pull request was open")
    return remote.result(target, "closed", reason, with_tip=False)


def _tip_info(repo: Repository, tip: str | None) -> CommitInfo | None:
    return gitdata.commit_info(repo, tip) if tip else None


def _unchanged(tip: CommitInfo | None, tree: str, head_sha: str) -> bool:
    return tip is not None and tip.tree == tree and tip.parents == (head_sha,)


def _write_with_api(
    repo: Repository, change: RepairChange, head: CommitInfo, tip: str | None
) -> tuple[str, Pushed] | None:
    """(the branch's commit, "api" when it moved) or None when the files change nothing on the head."""
    tree = gitdata.write_tree(repo, head.tree, change.files)
    if tree == head.tree:
        return None
    if _unchanged(_tip_info(repo, tip), tree, head.sha):
        assert tip is not None
        return tip, ""
    sha = gitdata.write_commit(repo, change.commit_message, tree, head.sha)
    gitdata.move_branch(repo, change.target.branch, sha, expected=tip)
    return sha, "api"


def _write_with_git(
    fallback: PushFallback,
    change: RepairChange,
    head: CommitInfo,
    tip: str | None,
    login: str,
    tip_info: CommitInfo | None,
) -> tuple[str, Pushed] | None:
    with LocalBranch(fallback, head.sha) as local:
        tree = local.write_tree(change.files)
        if tree == head.tree:
            return None
        if _unchanged(tip_info, tree, head.sha):
            assert tip is not None
            return tip, ""
        sha = local.commit(tree, change.commit_message, bot_identity(login))
        local.push(sha, change.target.branch, expected=tip)
    return sha, "git"
