"""Mode `post` (the default on workflow_run): what other jobs uploaded, as one sticky comment and one check run.

Two uses, one input (`artifacts`: the folder actions/download-artifact wrote, one subfolder per uploading job):
- `workflow_run` (the default mode there): a fork's or Dependabot's pull request evaluated with a read-only
  token and uploaded `sqlcanary-results/`; this job has a write token and never checks out the pull request's
  code. The pull request is found from the trusted event (bot.github.posting); legs a trusted check's final job
  posts (`posted_by: final_job`) are left to it. Exit 0 once posted: the verdict is in the check run.
- `pull_request`, in the final job of a sharded check (`needs:` the legs of `shard: i/N`): the pull request and
  commit are the event's. Exit code as `check`'s (the gate's, unless `fail-on-regression` is false). For a fork's
  pull request nothing is sent (a read-only token): the merged report goes to the job summary.

The artifact is untrusted (bot.github.artifact): every file is checked before anything is sent, and a refusal is
exit 2 naming the file and the reason. The comment and the check run are rendered here, from the validated runs,
with sqlcanary's templates (which escape every text of the runs); no text of the artifact is posted as given."""

from __future__ import annotations

from dataclasses import replace

from bot.base.errors import EXIT_OK
from bot.github.context import ActionContext
from bot.github.posting import legs_to_post
from bot.github.publish import outputs_of_check
from bot.modes.leg_merge import merged_check
from bot.modes.step import Step


def post(ctx: ActionContext, step: Step) -> int:
    """The legs to post and where (bot.github.posting), merged into one check (bot.modes.leg_merge), published
    to that pull request and commit."""
    publisher, out_dir = step.publisher, step.out_dir
    folder = step.inside(ctx.inputs.artifacts) if ctx.inputs.artifacts else None
    posting = legs_to_post(ctx, folder, make_github=publisher.make_github, log=publisher.log)
    if posting is None:
        return EXIT_OK
    result = merged_check(posting, out_dir=out_dir, secrets=step.settings.secrets)
    pr_number, head_sha = posting.pr_number, posting.head_sha
    to_pr = replace(
        publisher, ctx=replace(ctx, event=replace(ctx.event, pr_number=pr_number, head_sha=head_sha))
    )
    enforce = ctx.inputs.fail_on_regression
    publication = to_pr.publish_check(result, enforce=enforce)
    publisher.log.say(
        f"sqlcanary: pull request #{pr_number} at {head_sha[:12]}: {result.comparison.verdict} "
        f"({publication.conclusion})"
    )
    to_pr.write_outputs(outputs_of_check(result, out_dir))
    if ctx.event.event_name == "workflow_run" or not enforce:
        return EXIT_OK
    return result.exit_code
