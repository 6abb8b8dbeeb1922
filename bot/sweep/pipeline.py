"""`sweep run`: a sweep on this machine, from the grid file to the report. The legs as the Action's matrix
(bot.sweep.local), then the report as the Action's `sweep-report` writes it (bot.sweep.outputs:
sweep-report.md/.html/.json) from every setting whose legs all wrote a run.

The exit code: 0 when every leg exited 0; otherwise the highest code a leg exited with (2: bad input, such as an
agent that cannot start or fails every case; 3: a bug; 130: interrupted, or killed by a signal), after writing the
report of the settings that did run. A grid that cannot be read exits 2 before any leg starts."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.base.errors import EXIT_INTERRUPTED, EXIT_OK
from bot.base.settings import Settings
from bot.run.request import RunRequest
from bot.sweep.grid import load_grid
from bot.sweep.local import LegOutcome, leg_environment, plan_legs, run_legs
from bot.sweep.outputs import REPORT_NAME, sweep_report, write_all
from bot.sweep.report import SweepReport

Say = Callable[[str], None]


def default_jobs() -> int:
    """Legs at a time: one per core, at least two (a leg mostly waits on its agent and on PostgreSQL)."""
    return max(2, os.cpu_count() or 2)


@dataclass(frozen=True)
class SweepRun:
    code: int
    outcomes: tuple[LegOutcome, ...]
    report: SweepReport | None  # None: no setting has all its legs' runs
    written: tuple[Path, ...] = ()


def run_sweep(
    grid: str | Path,
    base: RunRequest,
    settings: Settings,
    *,
    out_dir: Path,
    shards: int = 1,
    jobs: int | None = None,
    say: Say = lambda _: None,
) -> SweepRun:
    """Plan, run every leg, report. `base` is the run every leg starts from (suite, config, case selection)."""
    grid_settings = load_grid(grid)
    legs = plan_legs(grid_settings, shards, out_dir)
    leg_env = leg_environment(base, settings)
    jobs = jobs or default_jobs()
    say(
        f"sweep run: {len(grid_settings)} setting(s) x {shards} shard(s) = {len(legs)} leg(s), "
        f"{min(jobs, len(legs))} at a time; logs beside the runs under {out_dir / 'sweep'}"
    )
    outcomes = run_legs(legs, base, leg_env, jobs=jobs, say=say)
    failed = [EXIT_INTERRUPTED if o.code < 0 else o.code for o in outcomes if o.code != EXIT_OK]
    code = max(failed) if failed else EXIT_OK
    incomplete = {o.leg.entry.name for o in outcomes if o.run is None}
    for name in sorted(incomplete, key=[s.name for s in grid_settings].index):
        say(f"sweep run: setting {name} is left out of the report: a leg of it wrote no run")
    runs = [
        (str(o.leg.out), o.run) for o in outcomes if o.run is not None and o.leg.entry.name not in incomplete
    ]
    if not runs:
        for suffix in (
            ".md",
            ".html",
            ".json",
        ):  # never leave an earlier sweep's report looking like this one's
            (out_dir / f"{REPORT_NAME}{suffix}").unlink(missing_ok=True)
        say("sweep run: no setting ran: no report")
        return SweepRun(code=code, outcomes=tuple(outcomes), report=None)
    report = sweep_report(runs)
    written = write_all(report, out_dir)
    return SweepRun(code=code, outcomes=tuple(outcomes), report=report, written=tuple(written))
