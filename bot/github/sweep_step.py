"""The sweep's three modes in the Action (bot.sweep does the work; this module knows the inputs and the runner):

- `sweep-plan`: input `grid` (a file, relative to the working directory) and `shards` -> output `matrix` (JSON for
  `fromJSON()`: one entry per setting x shard) and a job summary listing the settings;
- `sweep` (one matrix leg, `sweep_leg_step`): input `setting` (`${{ toJSON(matrix) }}`) and `shard` -> the
  setting's shard evaluated, its RunResult in sqlcanary-results/sweep/<setting>/shard-<i>-of-<n>.json with the
  setting recorded in it;
- `sweep-report`: input `artifacts` (the downloaded uploads, untrusted: bot.sweep.files) -> one table to the job
  summary and sqlcanary-results/sweep-report.{md,html,json}.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from bot.base.errors import EXIT_OK, ConfigError
from bot.base.results import write_run
from bot.base.settings import Settings
from bot.base.textfilters import md_code
from bot.github.publish import outputs_of_run
from bot.github.workflow import append_summary
from bot.run.pipeline import evaluate_request, run_exit
from bot.run.request import RunRequest
from bot.sweep.files import read_artifact_runs
from bot.sweep.grid import load_grid
from bot.sweep.leg import leg_environ, leg_path, leg_request, parse_setting, with_setting
from bot.sweep.outputs import sweep_report, write_all
from bot.sweep.plan import matrix_json, plan_matrix
from bot.sweep.render import render_summary

if TYPE_CHECKING:
    from bot.github.context import ActionContext
    from bot.github.publish import Publisher


def _inside(workdir: Path, text: str) -> Path:
    path = Path(text)
    return path if path.is_absolute() else workdir / path


def sweep_plan_step(ctx: ActionContext, settings: Settings, publisher: Publisher, *, workdir: Path) -> int:
    if not ctx.inputs.grid:
        raise ConfigError("input `grid`: mode `sweep-plan` needs the grid file")
    grid = _inside(workdir, ctx.inputs.grid)
    grid_settings = load_grid(grid)
    matrix = plan_matrix(grid_settings, ctx.inputs.shards)
    publisher.write_outputs({"matrix": matrix_json(matrix)})
    jobs = len(matrix["include"])
    lines = [
        f"## sqlcanary sweep plan: {len(grid_settings)} setting(s) x {ctx.inputs.shards} shard(s) = {jobs} job(s)",
        "",
        "| # | Setting | Model | Temp. | Agent | Preset | Repeat |",
        "|--:|---|---|--:|---|---|--:|",
    ]
    for i, s in enumerate(grid_settings, start=1):
        cells = [md_code(v, 60) if v is not None else "" for v in (s.name, s.model)]
        cells.append("" if s.temperature is None else str(s.temperature))
        cells += [md_code(v, 60) if v is not None else "" for v in (s.agent, s.preset)]
        cells.append("" if s.repeat is None else str(s.repeat))
        lines.append(f"| {i} | " + " | ".join(cells) + " |")
    if ctx.runner.step_summary:
        append_summary(ctx.runner.step_summary, "\n".join(lines) + "\n")
    publisher.log.say(f"sqlcanary: sweep plan: {len(grid_settings)} setting(s), {jobs} matrix job(s)")
    return EXIT_OK


def sweep_leg_step(
    ctx: ActionContext, settings: Settings, publisher: Publisher, out_dir: Path, request: RunRequest
) -> int:
    """One matrix leg: without input `setting`, the plain dispatch run (the suite or one shard of it)."""
    if not ctx.inputs.setting:
        out = out_dir / "run.json"
        req = replace(request, out=str(out), shard=ctx.inputs.shard, allow_invalid=True)
        done = evaluate_request(req, settings)
        code = run_exit(done, req, say=publisher.log.say)
        title = "sweep" + (f" (shard {ctx.inputs.shard})" if ctx.inputs.shard else "")
        publisher.publish_run(done.run, title=title)
        publisher.write_outputs(outputs_of_run(done.run, out))
        return code
    entry, shard = parse_setting(ctx.inputs.setting, shard=ctx.inputs.shard)
    out = leg_path(out_dir, entry.name, shard)
    # A sweep measures: a case whose gold does not run is reported (invalid), it does not stop the leg.
    req = replace(leg_request(request, entry, shard, out), allow_invalid=True)
    leg_settings = replace(settings, environ=MappingProxyType(leg_environ(dict(settings.environ), entry)))
    done = evaluate_request(req, leg_settings)
    run = with_setting(done.run, entry)
    write_run(out, run)
    done = replace(done, run=run)
    code = run_exit(done, req, say=publisher.log.say)
    publisher.publish_run(run, title=f"sweep {entry.name}" + (f" (shard {shard})" if shard else ""))
    publisher.write_outputs(outputs_of_run(run, out))
    return code


def sweep_report_step(
    ctx: ActionContext,
    settings: Settings,
    publisher: Publisher,
    *,
    workdir: Path,
    out_dir: Path,
) -> int:
    if not ctx.inputs.artifacts:
        raise ConfigError("input `artifacts`: mode `sweep-report` needs the folder of downloaded artifacts")
    folder = _inside(workdir, ctx.inputs.artifacts)
    runs = read_artifact_runs(folder)
    report = sweep_report(runs)
    written = write_all(report, out_dir)
    if ctx.runner.step_summary:
        append_summary(ctx.runner.step_summary, render_summary(report))
    publisher.log.say(
        f"sqlcanary: sweep report: {len(report.settings)} setting(s) from {len(runs)} run file(s): "
        + ", ".join(str(p) for p in written)
    )
    publisher.write_outputs(
        {
            "report-path": str(out_dir / "sweep-report.html"),
            "results-path": str(out_dir / "sweep-report.json"),
        }
    )
    return EXIT_OK
