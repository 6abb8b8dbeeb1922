"""Mode `baseline` (the default on push): the suite at that commit, cached under the cache dir by everything that
decides it, so a later pull request whose base is that commit makes no agent call for its base."""

from __future__ import annotations

from bot.base.errors import EXIT_OK
from bot.check.pipeline import run_baseline
from bot.check.request import CheckRequest
from bot.github.context import ActionContext
from bot.github.publish import outputs_of_run
from bot.modes.step import Step


def baseline(ctx: ActionContext, step: Step) -> int:
    out = step.out_dir / "baseline.json"
    req = CheckRequest(run=step.request, out_dir=str(step.out_dir))
    run, reused = run_baseline(req, step.settings, out=out)
    what = "already cached" if reused else "evaluated and cached"
    step.say(f"baseline at {(run.meta.git_sha or '')[:12]} {what}")
    step.publisher.publish_run(run, title="baseline")
    step.publisher.write_outputs(outputs_of_run(run, out))
    return EXIT_OK
