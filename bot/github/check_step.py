"""The Action's pull-request check (mode `check`) and its push baseline (mode `baseline`): what `sqlcanary action`
does for those events, below the command, as post_step and sweep_step are for theirs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.base.errors import EXIT_OK, ConfigError
from bot.base.git import Git
from bot.base.settings import Settings
from bot.check.pipeline import CheckResult, run_baseline, run_check
from bot.check.request import CheckRequest
from bot.github.event import EventContext
from bot.github.gitfetch import ensure_commit, verify_checkout
from bot.github.publish import outputs_of_check, outputs_of_run, write_untrusted_payload
from bot.github.repair_flow import RepairStep, repair_step
from bot.run.request import RunRequest

if TYPE_CHECKING:
    from bot.github.context import ActionContext
    from bot.github.publish import Publisher


def untrusted_why(event: EventContext) -> str:
    return "a Dependabot pull request" if event.is_dependabot else "a pull request from a fork"


def check_step(
    ctx: ActionContext,
    settings: Settings,
    publisher: Publisher,
    *,
    git: Git,
    out_dir: Path,
    request: RunRequest,
) -> int:
    """A pull request's check: the checkout verified, the base fetched through `git`, base against head
    (`request`: the run the inputs ask for), the repair pull request when asked and allowed, one publication
    (or, for a fork or a leg of a sharded check, its artifacts for the job that posts them); the gate's exit."""
    log = publisher.log
    base_sha = ctx.event.base_sha
    if ctx.event.event_name != "pull_request" or not base_sha:
        raise ConfigError("input `mode`: `check` needs a pull_request event (it compares the base commit)")
    if ctx.event.head_sha:  # before any evaluation or write: the check run goes to the commit evaluated
        verify_checkout(git, ctx.event.head_sha)
    token = ctx.inputs.github_token if ctx.trusted else None
    ensure_commit(git, base_sha, token=token, environ=settings.environ)
    shard = ctx.inputs.shard  # one leg of a sharded check: base and head on this shard's cases only
    repairing = ctx.inputs.repair and ctx.trusted and not shard
    req = CheckRequest(
        run=replace(request, shard=shard),
        base=base_sha,
        out_dir=str(out_dir),
        trust_head_config=False,
        attribute_calls=ctx.inputs.repair_max_agent_calls if repairing else 0,
        write_comment=False,  # rendered once, by the publisher, with the repair's line
    )

    def say(text: str) -> None:
        log.say(f"sqlcanary: {text}")

    result: CheckResult = run_check(req, settings, say=say)
    if ctx.inputs.repair and not ctx.trusted:
        say(f"no repair pull request for {untrusted_why(ctx.event)}")
    step = RepairStep(None)
    if repairing:
        step = repair_step(
            ctx,
            settings,
            result,
            make_github=publisher.make_github or (lambda _: None),
            workdir=publisher.workdir,
            repo=git.cwd,
            say=say,
            out_dir=out_dir,
        )
        if step.note:
            say(step.note)
    enforce = ctx.inputs.fail_on_regression
    lead = f"**Repair:** {step.note}" if step.note else ""
    if shard and ctx.inputs.comment == "off" and not ctx.inputs.check_run:
        publisher = replace(publisher, make_github=None)  # a leg: its artifacts only, for the final job
    publication = publisher.publish_check(result, enforce=enforce, lead=lead)
    if not ctx.trusted or shard:  # for the job that posts it (mode: post)
        write_untrusted_payload(out_dir, ctx, publication, result)
    publisher.write_outputs({**outputs_of_check(result, out_dir), **step.outputs})
    code = result.exit_code
    return EXIT_OK if not enforce and result.comparison.verdict == "regressions" else code


def baseline_step(settings: Settings, publisher: Publisher, *, out_dir: Path, request: RunRequest) -> int:
    """A push: the suite at that commit, cached for the pull requests whose base it is."""
    log = publisher.log
    req = CheckRequest(run=request, out_dir=str(out_dir))
    run, reused = run_baseline(req, settings, out=out_dir / "baseline.json")
    what = "already cached" if reused else "evaluated and cached"
    log.say(f"sqlcanary: baseline at {(run.meta.git_sha or '')[:12]} {what}")
    publisher.publish_run(run, title="baseline")
    publisher.write_outputs(outputs_of_run(run, out_dir / "baseline.json"))
    return EXIT_OK
