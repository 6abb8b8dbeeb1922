"""`sqlcanary sweep plan --grid GRID.yml --shards N [--out FILE]`: the matrix JSON of a sweep (bot.sweep.plan).
`sqlcanary sweep report RUN.json... [--md F] [--html F] [--json F]`: the legs' runs merged per setting and
compared in one table (bot.sweep); without a format flag the Markdown is printed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK
from bot.base.results import write_json_atomic
from bot.base.settings import Settings
from bot.sweep.files import read_run_files
from bot.sweep.grid import load_grid
from bot.sweep.outputs import sweep_report, write_reports
from bot.sweep.plan import matrix_json, plan_matrix
from bot.sweep.render import render_markdown


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="sweep_command", metavar="{plan,report}")
    plan = sub.add_parser("plan", help="print the matrix (one entry per setting x shard) for fromJSON()")
    plan.add_argument("--grid", required=True, help="the grid file (YAML: settings and/or axes)")
    plan.add_argument("--shards", type=int, default=1, help="matrix jobs per setting (default 1)")
    plan.add_argument("--out", help="write the matrix JSON here too")
    report = sub.add_parser("report", help="merge the legs' runs per setting and compare the settings")
    report.add_argument("runs", nargs="+", metavar="RUN.json", help="the sweep legs' RunResult files")
    report.add_argument("--md", help="write the Markdown table here")
    report.add_argument("--html", help="write the HTML report (a chart per metric) here")
    report.add_argument("--json", help="write the report's numbers as JSON here")


def main(args: argparse.Namespace, settings: Settings) -> int:
    if args.sweep_command == "plan":
        text = matrix_json(plan_matrix(load_grid(args.grid), args.shards))
        if args.out:
            write_json_atomic(args.out, text + "\n")
        print(text)
        return EXIT_OK
    if args.sweep_command == "report":
        report = sweep_report(read_run_files(args.runs))

        def path(value: str | None) -> Path | None:
            return Path(value) if value else None

        written = write_reports(report, md=path(args.md), html=path(args.html), json=path(args.json))
        if written:
            print(f"sweep report: {len(report.settings)} setting(s): " + ", ".join(map(str, written)))
        else:
            print(render_markdown(report), end="")
        return EXIT_OK
    print("sqlcanary sweep: give `plan` or `report` (see sqlcanary sweep --help)", file=sys.stderr)
    return EXIT_BAD_INPUT
