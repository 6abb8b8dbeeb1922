"""The pull request a `workflow_run` job posts for, found from the trusted event alone (py-cov-action's way).

Only a run triggered by `pull_request` is posted. `workflow_run.pull_requests[]` names the pull request when the
head branch lives in this repository; for a fork's pull request GitHub leaves it empty, so the open pull requests
whose head is `<head owner>:<head branch>` are listed (GET /repos/{owner}/{repo}/pulls?head=...&state=open).
Either way only those whose head is `workflow_run.head_sha` count: a pull request pushed to since has a newer
run, which posts its own results. The artifact's own claim (its pr_number) must be one of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.github.errors import API_ERRORS, api_error
from bot.github.event import WorkflowRunInfo

MAX_LISTED = 100  # open pull requests from one branch: far more than any real repository has


@dataclass(frozen=True)
class Candidates:
    numbers: tuple[int, ...]  # the pull requests the run may be posted to
    why_none: str = ""  # when there is none: why, for a notice


def skip_reason(run: WorkflowRunInfo) -> str:
    """Why this triggering run is not posted ("" when it is)."""
    if run.event != "pull_request":
        return (
            f"the run that triggered this one was a {run.event!r} event, not a pull request: nothing to post"
        )
    return ""


def find_pull_requests(repo: Any, run: WorkflowRunInfo) -> Candidates:
    """The open pull requests whose head is the run's commit; `repo` is a PyGithub Repository."""
    listed = [n for n, sha in run.pull_requests if sha == run.head_sha]
    if listed:
        return Candidates(tuple(sorted(set(listed))))
    if not run.head_owner or not run.head_branch:
        return Candidates((), "the event names no head repository or branch to look the pull request up by")
    head = f"{run.head_owner}:{run.head_branch}"
    try:
        found = []
        for i, pull in enumerate(repo.get_pulls(state="open", head=head)):
            if i >= MAX_LISTED:
                break
            if pull.head.sha == run.head_sha:
                found.append(pull.number)
    except API_ERRORS as exc:
        raise api_error(f"list the open pull requests of {head}", exc) from exc
    if not found:
        return Candidates(
            (),
            f"no open pull request has head {head} at {run.head_sha[:12]} (closed, or pushed to since: the "
            "newer run posts)",
        )
    return Candidates(tuple(sorted(set(found))))
