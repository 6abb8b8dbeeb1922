"""Mode `post` (the default on workflow_run): what other jobs uploaded, as one sticky comment and one check run.

Two uses, one input (`artifacts`: the folder actions/download-artifact wrote, one subfolder per uploading job):
- `workflow_run` (the default mode there): a fork's or Dependabot's pull request evaluated with a read-only
  token and uploaded `sqlcanary-results/`; this job has a write token and never checks out the pull request's
  code. The pull request is found from the trusted event (bot.github.find_pr); legs a trusted check's final job
  posts (`posted_by: final_job`) are left to it. Exit 0 once posted: the verdict is in the check run.
- `pull_request`, in the final job of a sharded check (`needs:` the legs of `shard: i/N`): the pull request and
  commit are the event's. Exit code as `check`'s (the gate's, unless `fail-on-regression` is false). For a fork's
  pull request nothing is sent (a read-only token): the merged report goes to the job summary.

The artifact is untrusted (bot.github.artifact): every file is checked before anything is sent, and a refusal is
exit 2 naming the file and the reason. The comment and the check run are rendered here, from the validated runs,
with sqlcanary's templates (which escape every text of the runs); no text of the artifact is posted as given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.base.errors import EXIT_OK, ConfigError, ResultFileError
from bot.base.resultfiles import ResultFiles
from bot.github.artifact import Leg, read_artifacts
from bot.github.client import get_repository
from bot.github.context import ActionContext
from bot.github.find_pr import find_pull_requests, skip_reason
from bot.github.leg_payload import PAYLOAD_FILE
from bot.github.publish import Publisher, outputs_of_check
from bot.github.workflow import notice
from bot.modes.leg_merge import combine_legs
from bot.modes.step import Step


def _artifacts(artifacts: str | None, step: Step) -> Path:
    if not artifacts:
        raise ConfigError(
            "input `artifacts`: `mode: post` needs the folder the check's artifacts were downloaded to"
        )
    return step.inside(artifacts)


def _workflow_run_pr(ctx: ActionContext, publisher: Publisher, legs: list[Leg]) -> int | None:
    """The pull request to post to: one the trusted event leads to, and the one the artifact names; None (after
    a notice) when the event leads to none."""
    run = ctx.event.workflow_run
    assert run is not None
    if publisher.make_github is None or not ctx.inputs.github_token:
        raise ConfigError("input `github-token`: `mode: post` needs a token that may write pull requests")
    github = publisher.make_github(ctx.inputs.github_token)
    found = find_pull_requests(get_repository(github, ctx.runner.repository), run)
    if not found.numbers:
        publisher.log.command(notice(f"sqlcanary: nothing posted: {found.why_none}"))
        return None
    claimed = legs[0].payload.pr_number
    if claimed not in found.numbers:
        named = ", ".join(f"#{n}" for n in found.numbers)
        raise ResultFileError(
            f"untrusted artifact refused: it names pull request #{claimed}, the run that uploaded it is for {named}",
            path=legs[0].where(PAYLOAD_FILE),
        )
    return claimed


def post(ctx: ActionContext, step: Step) -> int:
    event, publisher, out_dir = ctx.event, step.publisher, step.out_dir
    log = publisher.log
    if event.event_name == "workflow_run":
        assert event.workflow_run is not None
        why = skip_reason(event.workflow_run)
        if why:
            log.command(notice(f"sqlcanary: {why}"))
            return EXIT_OK
    elif event.event_name != "pull_request" or not event.pr_number or not event.head_sha:
        raise ConfigError(
            "input `mode`: `post` runs on a workflow_run event (a fork's results) or on a pull_request event "
            "(the final job of a sharded check)"
        )
    folder = _artifacts(ctx.inputs.artifacts, step)
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
        return EXIT_OK
    log.say(f"sqlcanary: {len(legs)} leg(s) in the artifacts: {', '.join(leg.name for leg in legs)}")
    if event.event_name == "workflow_run":
        assert event.workflow_run is not None
        pr_number: int | None = _workflow_run_pr(ctx, publisher, legs)
        head_sha = event.workflow_run.head_sha
        if pr_number is None:
            return EXIT_OK
    else:
        pr_number, head_sha = event.pr_number, event.head_sha or ""
    assert pr_number is not None
    result = combine_legs(legs, pr_number=pr_number, head_sha=head_sha, out_dir=out_dir)
    # The merged runs and their comparison beside the reports (outputs `results-path`; the artifact to keep),
    # masked as they are written; what is posted is what was written.
    files = ResultFiles(out_dir, step.settings.secrets)
    head = files.model("head.json", result.head)
    base = None if result.base is None else files.model("base.json", result.base)
    result = replace(
        result, head=head, base=base, comparison=files.model("comparison.json", result.comparison)
    )
    posting = replace(
        publisher, ctx=replace(ctx, event=replace(event, pr_number=pr_number, head_sha=head_sha))
    )
    enforce = ctx.inputs.fail_on_regression
    publication = posting.publish_check(result, enforce=enforce)
    log.say(
        f"sqlcanary: pull request #{pr_number} at {head_sha[:12]}: {result.comparison.verdict} "
        f"({publication.conclusion})"
    )
    posting.write_outputs(outputs_of_check(result, out_dir))
    if event.event_name == "workflow_run" or not enforce:
        return EXIT_OK
    return result.exit_code
