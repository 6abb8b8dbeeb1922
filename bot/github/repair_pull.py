"""The repair pull request itself: found again by its branch and hidden marker, opened as a draft stacked on the
source pull request's branch (CodeRabbit's autofix PR), labelled, edited in place only where it differs, and closed
with a comment. Never duplicated: one open pull request per repair branch."""

from __future__ import annotations

from dataclasses import dataclass

from github import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository

from bot.github.errors import API_ERRORS, api_error
from bot.github.repair_change import LABEL, RepairTarget

LABEL_COLOR = "5319e7"
LABEL_DESCRIPTION = "A draft pull request of verified KB repairs opened by sqlcanary"


@dataclass(frozen=True)
class FoundPull:
    """The open pull request from the repair branch; `ours` when it holds the marker and the bot opened it."""

    pull: PullRequest
    ours: bool


def find_pull(repo: Repository, target: RepairTarget, login: str) -> FoundPull | None:
    """The open pull request whose head is the repair branch: the bot's (marker and author) first, else any."""
    try:
        found = list(repo.get_pulls(state="open", head=f"{target.owner}:{target.branch}"))
    except API_ERRORS as exc:
        raise api_error(f"GET pulls?head={target.owner}:{target.branch}", exc) from exc
    for pull in found:
        if target.marker in (pull.body or "") and pull.user.login == login:
            return FoundPull(pull, ours=True)
    return FoundPull(found[0], ours=False) if found else None


def open_pull(repo: Repository, target: RepairTarget, title: str, body: str) -> PullRequest:
    """A draft pull request from the repair branch into the source pull request's branch, labelled."""
    try:
        try:
            pull = repo.create_pull(
                base=target.head_branch, head=target.branch, title=title, body=body, draft=True
            )
        except GithubException as exc:  # draft pull requests are not available on every plan
            if exc.status != 422 or "draft" not in str(exc.data).lower():
                raise
            pull = repo.create_pull(base=target.head_branch, head=target.branch, title=title, body=body)
    except API_ERRORS as exc:
        raise api_error(f"POST pulls (head {target.branch}, base {target.head_branch})", exc) from exc
    ensure_label(repo, pull)
    return pull


def ensure_label(repo: Repository, pull: PullRequest) -> bool:
    """Put LABEL on `pull` (creating the label when the repository lacks it); True when a label was added."""
    if any(label.name == LABEL for label in pull.labels):
        return False
    try:
        try:
            repo.create_label(LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
        except GithubException as exc:
            if exc.status != 422:  # 422: it exists already
                raise
        pull.add_to_labels(LABEL)
    except API_ERRORS as exc:
        raise api_error(f"label {LABEL} on #{pull.number}", exc) from exc
    return True


def edit_pull(pull: PullRequest, title: str, body: str) -> bool:
    """Set the title and body where they differ (one PATCH, or none); True when the pull request was edited."""
    new_title = title if pull.title != title else None
    new_body = body if (pull.body or "") != body else None
    if new_title is None and new_body is None:
        return False
    try:
        if new_title is not None and new_body is not None:
            pull.edit(title=new_title, body=new_body)
        elif new_title is not None:
            pull.edit(title=new_title)
        else:
            pull.edit(body=body)
    except API_ERRORS as exc:
        raise api_error(f"PATCH pulls/{pull.number}", exc) from exc
    return True


def close_pull(pull: PullRequest, why: str) -> None:
    """Say why in a comment, then close."""
    try:
        pull.create_issue_comment(f"sqlcanary closed this repair pull request: {why}")
        pull.edit(state="closed")
    except API_ERRORS as exc:
        raise api_error(f"closing pulls/{pull.number}", exc) from exc
