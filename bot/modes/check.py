"""Mode `check` (the default on pull_request): the pull request's head against its base commit, the repair pull
request when asked and allowed, one publication (or, for a fork or a leg of a sharded check, its artifacts for
the job that posts them); the gate's exit code."""

from __future__ import annotations

from dataclasses import replace

from bot.base.errors import EXIT_OK, ConfigError
from bot.check.pipeline import CheckResult, run_check
from bot.check.request import CheckRequest
from bot.github.context import ActionContext
from bot.github.event import untrusted_why
from bot.github.gitfetch import ensure_commit, verify_checkout
from bot.github.publish import outputs_of_check, write_untrusted_payload
from bot.modes.repair import RepairStep, repair_step
from bot.modes.step import Step


def check(ctx: ActionContext, step: Step) -> int:
    """The checkout verified, the base fetched through `step.git`, base against head (`step.request`: the run
    the inputs ask for), the repair, the publication; the gate's exit code (0 when `fail-on-regression` is false
    and the gate found regressions)."""
    inputs, event, git = ctx.inputs, ctx.event, step.git
    base_sha = event.base_sha
    if event.event_name != "pull_request" or not base_sha:
        raise ConfigError("input `mode`: `check` needs a pull_request event (it compares the base commit)")
    if event.head_sha:  # before any evaluation or write: the check run goes to the commit evaluated
        verify_checkout(git, event.head_sha)
    token = inputs.github_token if ctx.trusted else None
    ensure_commit(git, base_sha, token=token, environ=step.settings.environ)
    shard = inputs.shard  # one leg of a sharded check: base and head on this shard's cases only
    repairing = inputs.repair and ctx.trusted and not shard
    req = CheckRequest(
        run=replace(step.request, shard=shard),
        base=base_sha,
        out_dir=str(step.out_dir),
        trust_head_config=False,
        attribute_calls=inputs.repair_max_agent_calls if repairing else 0,
        write_comment=False,  # rendered once, by the publisher, with the repair's line
    )
    result: CheckResult = run_check(req, step.settings, say=step.say)
    if inputs.repair and not ctx.trusted:
        step.say(f"no repair pull request for {untrusted_why(event)}")
    repair = RepairStep(None)
    if repairing:
        repair = repair_step(
            ctx,
            step.settings,
            result,
            make_github=step.publisher.make_github or (lambda _: None),
            workdir=step.workdir,
            repo=git.cwd,
            say=step.say,
            out_dir=step.out_dir,
        )
        if repair.note:
            step.say(repair.note)
    enforce = inputs.fail_on_regression
    lead = f"**Repair:** {repair.note}" if repair.note else ""
    publisher = step.publisher
    if shard and inputs.comment == "off" and not inputs.check_run:
        publisher = replace(publisher, make_github=None)  # a leg: its artifacts only, for the final job
    publication = publisher.publish_check(result, enforce=enforce, lead=lead)
    if not ctx.trusted or shard:  # for the job that posts it (mode: post)
        write_untrusted_payload(step.out_dir, ctx, publication, result)
    publisher.write_outputs({**outputs_of_check(result, step.out_dir), **repair.outputs})
    code = result.exit_code
    return EXIT_OK if not enforce and result.comparison.verdict == "regressions" else code
