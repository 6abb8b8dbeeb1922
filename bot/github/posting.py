"""What a `post` job posts, and where (mode `post`): the legs of the downloaded artifact folder, checked as
untrusted data (bot.github.artifact) before any request, and the pull request and commit the TRUSTED event names.

- `workflow_run`: only a run triggered by `pull_request` is posted, and only the legs that ask a workflow_run job to
  post them (`posted_by`); the pull request is found from the event (bot.github.find_pr), and the one the artifact
  names must be among those found.
- `pull_request` (the final job of a sharded check): the event's pull request and head commit.

None, after a notice, when there is nothing to post; a ConfigError (exit 2) for an event or an input `post` cannot
use, a ResultFileError (exit 2) naming the file for an artifact it refuses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.errors import ConfigError, ResultFileError
from bot.github.artifact import Leg, read_artifacts
from bot.github.client import get_repository
from bot.github.context import ActionContext
from bot.github.find_pr import find_pull_requests, skip_reason
from bot.github.leg_payload import PAYLOAD_FILE
from bot.github.workflow import StepLog, notice


@dataclass(frozen=True)
class Posting:
    """The validated legs to post, and the pull request and head commit they are posted to."""

    legs: list[Leg]
    pr_number: int
    head_sha: str


def legs_to_post(
    ctx: ActionContext, folder: Path | None, *, make_github: Callable[[str], Any] | None, log: StepLog
) -> Posting | None:
    """The legs in `folder` (input `artifacts`, None when unset) and where they go (see the module's text);
    `make_github` builds the client the pull request of a `workflow_run` is looked up with (None: no token)."""
    event = ctx.event
    if event.event_name == "workflow_run":
        assert event.workflow_run is not None
        why = skip_reason(event.workflow_run)
        if why:
            log.command(notice(f"sqlcanary: {why}"))
            return None
    elif event.event_name != "pull_request" or not event.pr_number or not event.head_sha:
        raise ConfigError(
            "input `mode`: `post` runs on a workflow_run event (a fork's results) or on a pull_request event "
            "(the final job of a sharded check)"
        )
    if folder is None:
        raise ConfigError(
            "input `artifacts`: `mode: post` needs the folder the check's artifacts were downloaded to"
        )
    legs = read_artifacts(folder)  # every file checked before any request
    if event.event_name == "workflow_run":
        legs = [leg for leg in legs if leg.payload.posted_by == "workflow_run"]
    if not legs:
        if event.event_name == "pull_request":
            raise ConfigError(
                f"input `artifacts`: no {PAYLOAD_FILE} in {ctx.inputs.artifacts} or its subfolders: "
                "the legs upload sqlcanary-results/ with `shard: i/N`, `comment: off`, `check-run: false`"
            )
        log.command(
            notice("sqlcanary: nothing to post: no leg in the artifacts asks a workflow_run job to post")
        )
        return None
    log.say(f"sqlcanary: {len(legs)} leg(s) in the artifacts: {', '.join(leg.name for leg in legs)}")
    if event.event_name == "pull_request":
        assert event.pr_number is not None
        return Posting(legs, event.pr_number, event.head_sha or "")
    assert event.workflow_run is not None
    pr_number = _workflow_run_pr(ctx, legs, make_github=make_github, log=log)
    return None if pr_number is None else Posting(legs, pr_number, event.workflow_run.head_sha)


def _workflow_run_pr(
    ctx: ActionContext, legs: list[Leg], *, make_github: Callable[[str], Any] | None, log: StepLog
) -> int | None:
    """The pull request to post to: one the trusted event leads to, and the one the artifact names; None (after
    a notice) when the event leads to none."""
    run = ctx.event.workflow_run
    assert run is not None
    if make_github is None or not ctx.inputs.github_token:
        raise ConfigError("input `github-token`: `mode: post` needs a token that may write pull requests")
    github = make_github(ctx.inputs.github_token)
    found = find_pull_requests(get_repository(github, ctx.runner.repository), run)
    if not found.numbers:
        log.command(notice(f"sqlcanary: nothing posted: {found.why_none}"))
        return None
    claimed = legs[0].payload.pr_number
    if claimed not in found.numbers:
        named = ", ".join(f"#{n}" for n in found.numbers)
        raise ResultFileError(
            f"untrusted artifact refused: it names pull request #{claimed}, the run that uploaded it is for {named}",
            path=legs[0].where(PAYLOAD_FILE),
        )
    return claimed
