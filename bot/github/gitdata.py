"""Branches and commits through GitHub's REST git data API (blobs, trees, commits, refs, compare): a commit made
this way is attributed to the token's identity (and signed by GitHub for a bot token), as create-pull-request's
`sign-commits` and Renovate's `platformCommit` make theirs. REST only: no GraphQL.

`GitDataRefused` means the API said no (403/404/422: no `contents: write`, a ruleset, git data disabled); the
caller may then push with git instead (bot.github.gitpush)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from github import GithubException, InputGitTreeElement, RateLimitExceededException
from github.GitRef import GitRef
from github.Repository import Repository

from bot.github.errors import API_ERRORS, GitHubApiError, api_error

REFUSED_STATUSES = (403, 404, 422)
_NOREPLY = re.compile(r"^(?:\d+\+)?(?P<login>[^@]+)@users\.noreply\.github\.com$", re.IGNORECASE)


class GitDataRefused(GitHubApiError):
    """The git data API refused a write (403, 404 or 422)."""


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]


@dataclass(frozen=True)
class Author:
    """A commit's author: the GitHub login GitHub matched to its email (None when it matched none) and the email."""

    login: str | None
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.login or self.name} <{self.email}>"


def noreply_login(email: str) -> str | None:
    """The login in a GitHub noreply address (`<id>+<login>@users.noreply.github.com`), else None."""
    found = _NOREPLY.match(email.strip())
    return found.group("login") if found else None


def _refused_or_error(request: str, exc: Exception) -> GitHubApiError:
    if (
        isinstance(exc, GithubException)
        and exc.status in REFUSED_STATUSES
        and not isinstance(exc, RateLimitExceededException)
    ):
        message = exc.data.get("message") if isinstance(exc.data, dict) else str(exc.data)
        return GitDataRefused(f"GitHub API {request} was refused: HTTP {exc.status}: {message}")
    return api_error(request, exc)


class BranchMoved(GitHubApiError):
    """The branch is not where it was read: someone wrote it meanwhile."""


def _ref(repo: Repository, branch: str) -> GitRef | None:
    """The branch's ref, read (so that its `url` is GitHub's `.../git/refs/heads/...`, which PATCH and DELETE
    need: a lazy ref still holds the GET path `.../git/ref/...`), or None when there is no such branch."""
    try:
        ref = repo.get_git_ref(f"heads/{branch}")
        ref.object.sha  # noqa: B018  (completes the lazy object)
        return ref
    except GithubException as exc:
        if exc.status == 404:
            return None
        raise api_error(f"GET git/ref/heads/{branch}", exc) from exc
    except API_ERRORS as exc:
        raise api_error(f"GET git/ref/heads/{branch}", exc) from exc


def branch_tip(repo: Repository, branch: str) -> str | None:
    """The commit `branch` points at, or None when there is no such branch."""
    ref = _ref(repo, branch)
    return ref.object.sha if ref else None


def commit_info(repo: Repository, sha: str) -> CommitInfo:
    try:
        commit = repo.get_git_commit(sha)
        return CommitInfo(commit.sha, commit.tree.sha, tuple(p.sha for p in commit.parents))
    except API_ERRORS as exc:
        raise api_error(f"GET git/commits/{sha[:12]}", exc) from exc


def _commits_after(repo: Repository, base_sha: str, tip: str) -> dict[str, tuple[Author, tuple[str, ...]]]:
    """{sha: (author, parents)} of every commit reachable from `tip` and not from `base_sha` (compare base...tip)."""
    try:
        found = {}
        for commit in repo.compare(base_sha, tip).commits:
            git_author = commit.commit.author
            login = commit.author.login if commit.author is not None else None
            parents = tuple(p.sha for p in commit.parents)
            found[commit.sha] = (Author(login, git_author.name, git_author.email), parents)
        return found
    except API_ERRORS as exc:
        raise api_error(f"GET compare/{base_sha[:12]}...{tip[:12]}", exc) from exc


def foreign_commits(
    repo: Repository, base_sha: str, tip: str, is_ours: Callable[[Author], bool]
) -> list[str]:
    """The commits on the branch at `tip`, after `base_sha`, that another author made on top of the bot's commit
    (Renovate's rule), as `sha by author`; empty when the bot is the branch's only author.

    Walked from `tip` through the compare base...tip: a bot commit ends the walk, since what lies under it is the
    source pull request's own history (an older head, e.g. before a force-push), not the repair branch's."""
    commits = _commits_after(repo, base_sha, tip)
    foreign, seen, todo = [], set(), [tip]
    while todo:
        sha = todo.pop()
        if sha in seen or sha not in commits:
            continue
        seen.add(sha)
        author, parents = commits[sha]
        if is_ours(author):
            continue
        foreign.append(f"{sha[:12]} by {author}")
        todo += parents
    return foreign


def write_tree(repo: Repository, base_tree: str, files: Mapping[str, str]) -> str:
    """A tree: `base_tree` with each file replaced by its new text (one blob per file); its sha."""
    try:
        blobs = {path: repo.create_git_blob(text, "utf-8").sha for path, text in sorted(files.items())}
        elements = [InputGitTreeElement(path, "100644", "blob", sha=sha) for path, sha in blobs.items()]
        return repo.create_git_tree(elements, repo.get_git_tree(base_tree)).sha
    except API_ERRORS as exc:
        raise _refused_or_error("POST git/blobs, git/trees", exc) from exc


def write_commit(repo: Repository, message: str, tree: str, parent: str) -> str:
    """A commit of `tree` with the single parent `parent`, authored by the token's identity (no author given)."""
    try:
        return repo.create_git_commit(message, repo.get_git_tree(tree), [repo.get_git_commit(parent)]).sha
    except API_ERRORS as exc:
        raise _refused_or_error("POST git/commits", exc) from exc


def move_branch(repo: Repository, branch: str, sha: str, *, expected: str | None) -> None:
    """Create `branch` at `sha` (`expected` None), or force it there from `expected` (the repair branch is rebuilt
    on every run). BranchMoved when the branch is not at `expected` any more: a person's push is never lost to
    this update (the window left is the few milliseconds between this read and the PATCH)."""
    ref = _ref(repo, branch)
    if (ref.object.sha if ref else None) != expected:
        raise BranchMoved(f"{branch} moved while sqlcanary was writing it")
    try:
        if ref is not None:
            ref.edit(sha, force=True)
        else:
            repo.create_git_ref(f"refs/heads/{branch}", sha)
    except API_ERRORS as exc:
        raise _refused_or_error(f"{'PATCH' if ref else 'POST'} git/refs/heads/{branch}", exc) from exc


def delete_branch(repo: Repository, branch: str) -> None:
    ref = _ref(repo, branch)
    if ref is None:
        return
    try:
        ref.delete()
    except API_ERRORS as exc:
        raise api_error(f"DELETE git/refs/heads/{branch}", exc) from exc
