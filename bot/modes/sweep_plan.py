"""Mode `sweep-plan`: input `grid` (a file, relative to the working directory) and `shards` -> output `matrix` (JSON
for `fromJSON()`: one entry per setting x shard) and a job summary listing the settings (bot.sweep does the work)."""

from __future__ import annotations

from bot.base.errors import EXIT_OK, ConfigError
from bot.base.textfilters import md_code
from bot.github.context import ActionContext
from bot.github.workflow import append_summary
from bot.modes.step import Step
from bot.sweep.grid import load_grid
from bot.sweep.plan import matrix_json, plan_matrix


def sweep_plan(ctx: ActionContext, step: Step) -> int:
    grid, shards, summary = ctx.inputs.grid, ctx.inputs.shards, ctx.runner.step_summary
    if not grid:
        raise ConfigError("input `grid`: mode `sweep-plan` needs the grid file")
    grid_file = step.inside(grid)
    grid_settings = load_grid(grid_file)
    matrix = plan_matrix(grid_settings, shards)
    step.publisher.write_outputs({"matrix": matrix_json(matrix)})
    jobs = len(matrix["include"])
    lines = [
        f"## sqlcanary sweep plan: {len(grid_settings)} setting(s) x {shards} shard(s) = {jobs} job(s)",
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
    if summary:
        append_summary(summary, "\n".join(lines) + "\n")
    step.say(f"sweep plan: {len(grid_settings)} setting(s), {jobs} matrix job(s)")
    return EXIT_OK
