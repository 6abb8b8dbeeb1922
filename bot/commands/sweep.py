"""`sqlcanary sweep plan --grid GRID.yml --shards N [--out FILE]`: the matrix JSON of a sweep (bot.sweep.plan).
`sqlcanary sweep run GRID.yml [SUITE] [--jobs N] [--out DIR]`: the whole sweep on this machine, the legs in
parallel, the report as the Action's (bot.sweep.pipeline).
`sqlcanary sweep report RUN... [--out DIR] [--md F] [--html F] [--json F]`: the legs' runs merged per setting and
compared in one table (bot.sweep); without an output flag the Markdown is printed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK, ConfigError
from bot.base.results import write_json_atomic
from bot.base.settings import Settings
from bot.cases.selection import split_tags
from bot.run.request import RunRequest
from bot.sweep.files import read_run_files
from bot.sweep.grid import load_grid
from bot.sweep.outputs import sweep_report, write_all, write_reports
from bot.sweep.pipeline import run_sweep
from bot.sweep.plan import matrix_json, plan_matrix
from bot.sweep.render import render_markdown

DEFAULT_OUT_DIR = "sqlcanary-results"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="sweep_command", metavar="{plan,run,report}")
    plan = sub.add_parser("plan", help="print the matrix (one entry per setting x shard) for fromJSON()")
    plan.add_argument("--grid", required=True, help="the grid file (YAML: settings and/or axes)")
    plan.add_argument("--shards", type=int, default=1, help="matrix jobs per setting (default 1)")
    plan.add_argument("--out", help="write the matrix JSON here too")
    _add_run_arguments(sub.add_parser("run", help="run every leg of the grid here, in parallel, and report"))
    report = sub.add_parser("report", help="merge the legs' runs per setting and compare the settings")
    report.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="RunResult files (a run that records no setting is named after its file, a shard after its folder), "
        "folders `sweep run` wrote, or NAME=PATH (a file or a folder of *.json: the setting NAME)",
    )
    report.add_argument("--out", help="write sweep-report.md, .html and .json in this folder")
    report.add_argument("--md", help="write the Markdown table here")
    report.add_argument("--html", help="write the HTML report (a chart per metric) here")
    report.add_argument("--json", help="write the report's numbers as JSON here")


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("grid", metavar="GRID.yml", help="the grid file (YAML: settings and/or axes)")
    run.add_argument("suite", nargs="?", help="suite folder or file (default: `suite` in sqlcanary.yml)")
    run.add_argument("--config", help="sqlcanary.yml (default: the suite folder's, then ./sqlcanary.yml)")
    run.add_argument("--jobs", type=int, help="legs run at a time (default: one per core, at least 2)")
    run.add_argument("--shards", type=int, default=1, help="legs per setting, as the Action's (default 1)")
    run.add_argument(
        "--out",
        default=DEFAULT_OUT_DIR,
        help=f"the legs' runs and the report go here (default {DEFAULT_OUT_DIR})",
    )
    run.add_argument("--workers", type=int, help="parallel workers inside each leg (its run's --jobs)")
    run.add_argument("--dsn", help="PostgreSQL to use (default: DATABASE_URL, then an embedded server)")
    run.add_argument("--postgres", choices=["auto", "embedded", "docker"], help="where PostgreSQL comes from")
    run.add_argument("--tags", help="only cases with any of these tags (comma-separated)")
    run.add_argument(
        "--id", action="append", dest="ids", help="only this case id (repeatable; globs allowed)"
    )
    run.add_argument("--agent-timeout", type=float, help="seconds a process agent may take per case")
    run.add_argument("--statement-timeout", help="per statement, e.g. 30s (default: the suite's, else 30s)")
    run.add_argument("--no-answer-cache", action="store_true", help="always ask the agent")
    run.add_argument(
        "--sandbox", choices=["auto", "on", "off"], help="the legs' agent sandbox (default auto)"
    )


def _sweep_run(args: argparse.Namespace, settings: Settings) -> int:
    for flag, value in (("--jobs", args.jobs), ("--workers", args.workers)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag}: expected at least 1, got {value}")
    base = RunRequest(
        suite=args.suite,
        config=args.config,
        dsn=args.dsn,
        postgres=args.postgres,
        tags=split_tags(args.tags),
        ids=tuple(args.ids or ()),
        jobs=args.workers,
        agent_timeout=args.agent_timeout,
        statement_timeout=args.statement_timeout,
        no_answer_cache=args.no_answer_cache,
        sandbox=args.sandbox,
        quiet=True,
    )

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    done = run_sweep(
        args.grid, base, settings, out_dir=Path(args.out), shards=args.shards, jobs=args.jobs, say=say
    )
    if done.report is not None:
        print(render_markdown(done.report), end="")
        print(f"sweep report: {len(done.report.settings)} setting(s): " + ", ".join(map(str, done.written)))
    return done.code


def main(args: argparse.Namespace, settings: Settings) -> int:
    if args.sweep_command == "plan":
        text = matrix_json(plan_matrix(load_grid(args.grid), args.shards))
        if args.out:
            write_json_atomic(args.out, text + "\n")
        print(text)
        return EXIT_OK
    if args.sweep_command == "run":
        return _sweep_run(args, settings)
    if args.sweep_command == "report":
        report = sweep_report(read_run_files(args.runs))

        def path(value: str | None) -> Path | None:
            return Path(value) if value else None

        written = write_all(report, Path(args.out)) if args.out else []
        written += write_reports(report, md=path(args.md), html=path(args.html), json=path(args.json))
        if written:
            print(f"sweep report: {len(report.settings)} setting(s): " + ", ".join(map(str, written)))
        else:
            print(render_markdown(report), end="")
        return EXIT_OK
    print("sqlcanary sweep: give `plan`, `run` or `report` (see sqlcanary sweep --help)", file=sys.stderr)
    return EXIT_BAD_INPUT
