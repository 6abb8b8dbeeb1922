"""Mode `sweep` (the default on workflow_dispatch): one matrix leg of a sweep. Input `setting` (one entry of
`sweep-plan`'s matrix, `${{ toJSON(matrix) }}`) and `shard` -> the setting's shard evaluated, its RunResult in
sqlcanary-results/sweep/<setting>/shard-<i>-of-<n>.json with the setting recorded in it. Without `setting`: the
plain dispatch run (the suite, or one shard of it)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from bot.base.results import write_run
from bot.github.context import ActionContext
from bot.github.publish import outputs_of_run
from bot.modes.step import Step
from bot.run.pipeline import evaluate_request, run_exit
from bot.sweep.leg import leg_environ, leg_path, leg_request, parse_setting, with_setting


def sweep_leg(ctx: ActionContext, step: Step) -> int:
    setting, shard, publisher = ctx.inputs.setting, ctx.inputs.shard, step.publisher
    if not setting:
        out = step.out_dir / "run.json"
        req = replace(step.request, out=str(out), shard=shard, allow_invalid=True)
        done = evaluate_request(req, step.settings)
        code = run_exit(done, req, say=publisher.log.say)
        publisher.publish_run(done.run, title="sweep" + (f" (shard {shard})" if shard else ""))
        publisher.write_outputs(outputs_of_run(done.run, out))
        return code
    entry, leg_shard = parse_setting(setting, shard=shard)
    out = leg_path(step.out_dir, entry.name, leg_shard)
    # A sweep measures: a case whose gold does not run is reported (invalid), it does not stop the leg.
    req = replace(leg_request(step.request, entry, leg_shard, out), allow_invalid=True)
    settings = step.settings
    leg_settings = replace(settings, environ=MappingProxyType(leg_environ(dict(settings.environ), entry)))
    done = evaluate_request(req, leg_settings)
    run = with_setting(done.run, entry)
    write_run(out, run)
    done = replace(done, run=run)
    code = run_exit(done, req, say=publisher.log.say)
    publisher.publish_run(run, title=f"sweep {entry.name}" + (f" (shard {leg_shard})" if leg_shard else ""))
    publisher.write_outputs(outputs_of_run(run, out))
    return code
