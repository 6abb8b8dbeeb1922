"""The workflow event payload (GITHUB_EVENT_PATH) reduced to what the Action needs.

Lenient on purpose: GitHub adds keys to its payloads often, so unknown keys are ignored; a missing or malformed
field the Action needs is an `EventPayloadError` naming it (`pull_request.base.sha`), not a KeyError traceback.
Fork and Dependabot pull requests are marked untrusted: they run with a read-only token and no secrets. A
`workflow_run` event (the job that posts a fork's results) is trusted itself: it runs the default branch's workflow;
what it says about the run that triggered it is in `EventContext.workflow_run`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.github.errors import EventPayloadError

Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
SUPPORTED_EVENTS = ("pull_request", "push", "workflow_dispatch", "workflow_run")
DEPENDABOT_LOGINS = frozenset({"dependabot[bot]", "dependabot-preview[bot]"})
_NULL_SHA = "0" * 40


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _User(_Lenient):
    login: str


class _Repo(_Lenient):
    full_name: str
    default_branch: str = ""
    clone_url: str = ""


class _PullSide(_Lenient):
    sha: Sha
    ref: str
    repo: _Repo | None  # null when the fork the PR came from was deleted


class _PullRequest(_Lenient):
    number: int
    head: _PullSide
    base: _PullSide
    user: _User
    draft: bool = False


class _PullRequestEvent(_Lenient):
    pull_request: _PullRequest
    repository: _Repo
    sender: _User | None = None


class _PushEvent(_Lenient):
    ref: str
    before: Sha
    after: Sha
    repository: _Repo
    sender: _User | None = None
    deleted: bool = False


class _DispatchEvent(_Lenient):
    ref: str
    repository: _Repo
    sender: _User | None = None
    inputs: dict[str, Any] | None = None


class _RunPullSide(_Lenient):
    sha: str = ""
    ref: str = ""


class _RunPull(_Lenient):
    number: int
    head: _RunPullSide = _RunPullSide()


class _Owner(_Lenient):
    login: str


class _HeadRepo(_Lenient):
    full_name: str
    owner: _Owner


class _WorkflowRun(_Lenient):
    id: int
    event: str
    head_sha: Sha
    head_branch: str | None = None
    conclusion: str | None = None
    head_repository: _HeadRepo | None = None
    pull_requests: list[_RunPull] = []
    actor: _User | None = None
    triggering_actor: _User | None = None


class _WorkflowRunEvent(_Lenient):
    workflow_run: _WorkflowRun
    repository: _Repo
    sender: _User | None = None


@dataclass(frozen=True)
class WorkflowRunInfo:
    """What a `workflow_run` event says about the run that triggered it (GitHub wrote it: trusted)."""

    run_id: int
    event: str  # the triggering run's event: only `pull_request` runs are posted
    head_sha: str
    head_branch: str
    head_owner: str  # the login owning the head repository (a fork's owner)
    head_repository: str
    conclusion: str
    pull_requests: tuple[tuple[int, str], ...]  # (number, head sha); empty for a fork's pull request
    from_fork: bool
    by_dependabot: bool


@dataclass(frozen=True)
class EventContext:
    event_name: Literal["pull_request", "push", "workflow_dispatch", "workflow_run"]
    repository: str  # owner/name of the repository the workflow runs in
    ref: str  # the pushed or dispatched ref, or the PR's base branch
    head_sha: str | None  # PR head or pushed commit: what check runs and statuses attach to
    base_sha: str | None  # PR base, or the commit before a push (None for a new branch)
    pr_number: int | None = None
    head_repository: str | None = None  # where the PR's head branch lives
    head_ref: str | None = None
    actor: str = ""
    default_branch: str = ""
    is_fork: bool = False  # head in another repository (or a deleted fork): untrusted
    is_dependabot: bool = False
    workflow_run: WorkflowRunInfo | None = None  # a workflow_run event: the run that triggered this one

    @property
    def untrusted(self) -> bool:
        """No write request, no secret, no repair: GitHub gives such runs a read-only token anyway."""
        return self.is_fork or self.is_dependabot

    @property
    def on_default_branch(self) -> bool:
        return bool(self.default_branch) and self.ref == f"refs/heads/{self.default_branch}"


def untrusted_why(event: EventContext) -> str:
    """Why an event is evaluated only (no comment, no check run, no LLM key), for the notice that says so."""
    return "a Dependabot pull request" if event.is_dependabot else "a pull request from a fork"


def _field_error(event_name: str, exc: ValidationError) -> EventPayloadError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(payload)"
    problem = "missing field" if first["type"] == "missing" else f"bad field ({first['msg']})"
    return EventPayloadError(f"{event_name} event payload: {problem} {where}")


def parse_event(event_name: str, payload: Mapping[str, Any], *, sha: str | None = None) -> EventContext:
    """The `EventContext` of one payload; `sha` (GITHUB_SHA) is the head for events whose payload lacks one."""
    if event_name not in SUPPORTED_EVENTS:
        raise EventPayloadError(
            f"unsupported event {event_name!r}: the Action runs on {', '.join(SUPPORTED_EVENTS)}"
        )
    try:
        if event_name == "pull_request":
            return _from_pull_request(_PullRequestEvent.model_validate(payload))
        if event_name == "push":
            return _from_push(_PushEvent.model_validate(payload))
        if event_name == "workflow_run":
            return _from_workflow_run(_WorkflowRunEvent.model_validate(payload))
        return _from_dispatch(_DispatchEvent.model_validate(payload), sha)
    except ValidationError as exc:
        raise _field_error(event_name, exc) from None


def load_event(event_name: str, path: Path, *, sha: str | None = None) -> EventContext:
    """Read and parse the payload file GITHUB_EVENT_PATH points at."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EventPayloadError(f"cannot read the event payload: {exc.strerror}", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise EventPayloadError(
            f"event payload is not JSON: {exc.msg}", path=str(path), line=exc.lineno
        ) from None
    if not isinstance(payload, dict):
        raise EventPayloadError("event payload is not a JSON object", path=str(path))
    return parse_event(event_name, payload, sha=sha)


def _from_pull_request(event: _PullRequestEvent) -> EventContext:
    pr = event.pull_request
    head_repo = pr.head.repo.full_name if pr.head.repo else None
    base_repo = pr.base.repo.full_name if pr.base.repo else event.repository.full_name
    author = pr.user.login
    actor = event.sender.login if event.sender else author
    return EventContext(
        event_name="pull_request",
        repository=event.repository.full_name,
        ref=f"refs/heads/{pr.base.ref}",
        head_sha=pr.head.sha,
        base_sha=pr.base.sha,
        pr_number=pr.number,
        head_repository=head_repo,
        head_ref=pr.head.ref,
        actor=actor,
        default_branch=event.repository.default_branch,
        is_fork=head_repo is None or head_repo.lower() != base_repo.lower(),
        is_dependabot=author in DEPENDABOT_LOGINS or actor in DEPENDABOT_LOGINS,
    )


def _from_push(event: _PushEvent) -> EventContext:
    if event.deleted:
        raise EventPayloadError(f"push event deletes {event.ref}: nothing to evaluate")
    actor = event.sender.login if event.sender else ""
    return EventContext(
        event_name="push",
        repository=event.repository.full_name,
        ref=event.ref,
        head_sha=event.after,
        base_sha=None if event.before == _NULL_SHA else event.before,
        actor=actor,
        default_branch=event.repository.default_branch,
        is_dependabot=actor in DEPENDABOT_LOGINS,
    )


def _from_dispatch(event: _DispatchEvent, sha: str | None) -> EventContext:
    return EventContext(
        event_name="workflow_dispatch",
        repository=event.repository.full_name,
        ref=event.ref,
        head_sha=sha,
        base_sha=None,
        actor=event.sender.login if event.sender else "",
        default_branch=event.repository.default_branch,
    )


def _from_workflow_run(event: _WorkflowRunEvent) -> EventContext:
    run = event.workflow_run
    head_repo = run.head_repository.full_name if run.head_repository else ""
    actors = {u.login for u in (run.actor, run.triggering_actor) if u}
    info = WorkflowRunInfo(
        run_id=run.id,
        event=run.event,
        head_sha=run.head_sha,
        head_branch=run.head_branch or "",
        head_owner=run.head_repository.owner.login if run.head_repository else "",
        head_repository=head_repo,
        conclusion=run.conclusion or "",
        pull_requests=tuple((p.number, p.head.sha) for p in run.pull_requests),
        from_fork=not head_repo or head_repo.lower() != event.repository.full_name.lower(),
        by_dependabot=bool(actors & DEPENDABOT_LOGINS),
    )
    return EventContext(
        event_name="workflow_run",
        repository=event.repository.full_name,
        ref=f"refs/heads/{event.repository.default_branch}" if event.repository.default_branch else "",
        head_sha=run.head_sha,  # what the check run attaches to: the commit the triggering run evaluated
        base_sha=None,
        head_repository=head_repo or None,
        head_ref=run.head_branch,
        actor=event.sender.login if event.sender else "",
        default_branch=event.repository.default_branch,
        workflow_run=info,
    )
