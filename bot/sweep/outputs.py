"""A sweep's table from its legs' runs, and the files it is written to (sqlcanary-results/sweep-report.*)."""

from __future__ import annotations

from pathlib import Path

from bot.base.results import RunResult, write_json_atomic
from bot.sweep.collect import by_setting
from bot.sweep.render import render_html, render_json, render_markdown
from bot.sweep.report import SweepReport, build_report

REPORT_NAME = "sweep-report"


def sweep_report(runs: list[tuple[str, RunResult]]) -> SweepReport:
    """Group the runs by setting, merge each setting's shards, compare every setting with the first."""
    return build_report(by_setting(runs))


def write_reports(
    report: SweepReport, *, md: Path | None = None, html: Path | None = None, json: Path | None = None
) -> list[Path]:
    """Write the formats asked for; the paths written."""
    written = []
    for path, render in ((md, render_markdown), (html, render_html), (json, render_json)):
        if path is not None:
            write_json_atomic(path, render(report))
            written.append(path)
    return written


def write_all(report: SweepReport, out_dir: Path) -> list[Path]:
    """sweep-report.md, .html and .json in `out_dir`."""
    return write_reports(
        report,
        md=out_dir / f"{REPORT_NAME}.md",
        html=out_dir / f"{REPORT_NAME}.html",
        json=out_dir / f"{REPORT_NAME}.json",
    )
