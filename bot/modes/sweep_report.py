"""Mode `sweep-report`: input `artifacts` (the downloaded uploads of the sweep's legs, untrusted: bot.sweep.files)
-> one table to the job summary and sqlcanary-results/sweep-report.{md,html,json}."""

from __future__ import annotations

from bot.base.errors import EXIT_OK, ConfigError
from bot.github.context import ActionContext
from bot.github.workflow import append_summary
from bot.modes.step import Step
from bot.sweep.files import read_artifact_runs
from bot.sweep.outputs import sweep_report as build_report
from bot.sweep.outputs import write_all
from bot.sweep.render import render_summary


def sweep_report(ctx: ActionContext, step: Step) -> int:
    artifacts, summary, out_dir = ctx.inputs.artifacts, ctx.runner.step_summary, step.out_dir
    if not artifacts:
        raise ConfigError("input `artifacts`: mode `sweep-report` needs the folder of downloaded artifacts")
    folder = step.inside(artifacts)
    runs = read_artifact_runs(folder)
    report = build_report(runs)
    written = write_all(report, out_dir)
    if summary:
        append_summary(summary, render_summary(report))
    step.say(
        f"sweep report: {len(report.settings)} setting(s) from {len(runs)} run file(s): "
        + ", ".join(str(p) for p in written)
    )
    step.publisher.write_outputs(
        {
            "report-path": str(out_dir / "sweep-report.html"),
            "results-path": str(out_dir / "sweep-report.json"),
        }
    )
    return EXIT_OK
