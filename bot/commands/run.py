"""`sqlcanary run`: evaluate a suite with an agent and write a RunResult."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bot.agents import AgentContext, make_agent
from bot.cases.loader import load_suite, parse_duration_ms, select_cases
from bot.config import Config, database_url, find_config
from bot.db.provision import provision
from bot.errors import EXIT_BUG, EXIT_GATE, EXIT_OK, ConfigError
from bot.report.console import Progress, problem_lines, summary_table
from bot.runner import RunOptions, run_suite
from bot.scoring.presets import PRESETS

DEFAULT_OUT = "sqlcanary-results/run.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", nargs="?", help="suite folder or file (default: `suite` in sqlcanary.yml)")
    p.add_argument("--config", help="sqlcanary.yml (default: the suite folder's, then ./sqlcanary.yml)")
    p.add_argument(
        "--agent",
        help="gold | gold:all | predictions:PATH | run:RUN.json | command:CMD | "
        "python:FILE_OR_MODULE:FUNCTION (default: the config's agent, else gold)",
    )
    p.add_argument("--agent-timeout", type=float, help="seconds an agent may take per case (default 120)")
    p.add_argument(
        "--persistent", action="store_true", help="command agents: one long-lived JSON-lines process"
    )
    p.add_argument("--dsn", help="PostgreSQL to use (default: DATABASE_URL, then an embedded server)")
    p.add_argument("--postgres", choices=["auto", "embedded", "docker"], help="where PostgreSQL comes from")
    p.add_argument("--tags", help="only cases with any of these tags (comma-separated)")
    p.add_argument("--id", action="append", dest="ids", help="only this case id (repeatable; globs allowed)")
    p.add_argument("--jobs", type=int, help="parallel workers (default: 2)")
    p.add_argument("--out", help=f"where to write the RunResult JSON (default: {DEFAULT_OUT})")
    p.add_argument("--preset", choices=PRESETS, help="compare results the way this evaluator does")
    p.add_argument("--statement-timeout", help="per statement, e.g. 30s (default: the suite's, else 30s)")
    p.add_argument("--row-cap", type=int, help="rows fetched per query before a result counts as truncated")
    p.add_argument(
        "--structural", action="store_true", help="structural diff on every case, not only failures"
    )
    p.add_argument("--min-pass-rate", type=float, help="exit 1 when the pass rate (0-1) is below this")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def _agent(args: argparse.Namespace, config: Config):
    spec = args.agent or (config.agent.spec if config.agent else "gold")
    from_config = not args.agent and config.agent is not None
    timeout = args.agent_timeout or (config.agent.timeout if config.agent else 120.0)
    options = dict(config.agent.options) if config.agent and from_config else {}
    if args.persistent or (config.agent and from_config and config.agent.persistent):
        options["persistent"] = True
    base = config.base_dir if from_config else os.getcwd()
    return make_agent(spec, AgentContext(base_dir=base, options=options, timeout_s=timeout))


def main(args: argparse.Namespace) -> int:
    config = find_config(args.config, args.suite)
    suite_path = args.suite or (str(config.path(config.suite)) if config.suite else None)
    if not suite_path:
        raise ConfigError("no suite given: pass a suite folder or set `suite:` in sqlcanary.yml")
    suite = load_suite(suite_path)
    tags = [t.strip() for t in args.tags.split(",") if t.strip()] if args.tags else None
    cases = select_cases(suite.cases, tags=tags, ids=args.ids)
    if not cases:
        raise ConfigError("no case matches the filters" if (tags or args.ids) else "the suite has no cases")
    jobs = args.jobs or config.jobs or 2
    if jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    timeout = args.statement_timeout or config.statement_timeout
    out = Path(args.out or (str(config.path(config.out)) if config.out else DEFAULT_OUT))
    opts = RunOptions(
        jobs=jobs,
        preset=args.preset or config.preset,
        statement_timeout_ms=parse_duration_ms(timeout, path="--statement-timeout", line=None)
        if timeout
        else None,
        row_cap=args.row_cap or config.row_cap,
        structural=args.structural,
        out=out,
        filters={k: v for k, v in {"tags": tags, "ids": args.ids}.items() if v},
    )
    agent = _agent(args, config)
    server = provision(dsn=database_url(args.dsn, config), mode=args.postgres or config.postgres)
    if not args.quiet:
        print(
            f"sqlcanary: suite {suite.name}: {len(cases)} case(s), agent {agent.name}, "
            f"PostgreSQL {server.version} ({server.kind}), {jobs} worker(s)",
            file=sys.stderr,
        )
    progress = Progress(len(cases), enabled=not args.quiet)
    try:
        run = run_suite(suite, cases, agent, server, opts, progress=progress)
    finally:
        progress.close()
    print(summary_table(run))
    problems = problem_lines(run)
    if problems:
        print("\nnot passed:\n" + problems)
    print(f"\nresults written to {out} ({run.meta.duration_s:.1f}s)")
    bugs = [c.id for c in run.cases if c.error_class == "internal_error"]
    if bugs:
        print(
            f"sqlcanary: {len(bugs)} case(s) hit an internal error (a bug): {', '.join(bugs[:10])}",
            file=sys.stderr,
        )
        return EXIT_BUG
    if args.min_pass_rate is not None:
        rate = run.summary.pass_rate or 0.0
        if rate < args.min_pass_rate:
            print(
                f"sqlcanary: pass rate {rate:.1%} is below --min-pass-rate {args.min_pass_rate:.1%}",
                file=sys.stderr,
            )
            return EXIT_GATE
    return EXIT_OK
