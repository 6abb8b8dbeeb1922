"""`sqlcanary audit [SUITE]`: suspect golds, found on the suite's fixtures before an agent is blamed (bot.audit).
Advisory: exit 0 whatever it finds, 1 under `--strict` when a gold is suspect, 2 on bad input, 3 on a bug."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.audit.pipeline import AuditRequest, audit_request
from bot.audit.render import as_json, as_text
from bot.base.errors import EXIT_BUG, EXIT_GATE, EXIT_OK, ConfigError
from bot.base.results import write_json_atomic
from bot.base.settings import Settings
from bot.cases.selection import split_tags
from bot.config.model import MAX_PERTURB


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", nargs="?", help="suite folder or file (default: `suite` in sqlcanary.yml)")
    p.add_argument("--config", help="sqlcanary.yml (default: the suite folder's, then ./sqlcanary.yml)")
    p.add_argument("--dsn", help="PostgreSQL to use (default: DATABASE_URL, then an embedded server)")
    p.add_argument("--postgres", choices=["auto", "embedded", "docker"], help="where PostgreSQL comes from")
    p.add_argument("--tags", help="only cases with any of these tags (comma-separated)")
    p.add_argument("--id", action="append", dest="ids", help="only this case id (repeatable; globs allowed)")
    p.add_argument("--jobs", type=int, help="parallel workers (default: the config's, else 2)")
    p.add_argument(
        "--runs",
        nargs="+",
        metavar="RUN.json",
        default=[],
        help="saved RunResults (runs, repeats, sweep legs): a case whose answers mostly agree on a result the "
        "gold does not accept is suspect (agreement_against_gold)",
    )
    p.add_argument(
        "--perturb",
        type=int,
        metavar="K",
        help="compare each case's gold alternatives on the K perturbed copies a run judges it on "
        "(gold_fails_on_perturbed; default: the config's perturb, else 0 = off)",
    )
    p.add_argument(
        "--llm",
        action="store_true",
        help="ask the config's LLM whether each question and its gold match (llm_hint: a hint, low "
        "confidence, never counted by --strict)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text", help="how to print the suspects")
    p.add_argument("--out", help="also write the report (in --format) to this file")
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when any gold is suspect (default: advisory)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--suite-data", help=argparse.SUPPRESS
    )  # a check's head: its suite as its reader parsed it


def main(args: argparse.Namespace, settings: Settings) -> int:
    if args.perturb is not None and not 0 <= args.perturb <= MAX_PERTURB:
        raise ConfigError(f"--perturb must be between 0 and {MAX_PERTURB}, not {args.perturb}")
    req = AuditRequest(
        suite=args.suite,
        config=args.config,
        dsn=args.dsn,
        postgres=args.postgres,
        tags=split_tags(args.tags),
        ids=tuple(args.ids or ()),
        runs=tuple(args.runs or ()),
        jobs=args.jobs,
        perturb=args.perturb,
        llm=args.llm,
        suite_data=args.suite_data,
    )
    say = (lambda _: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    done = audit_request(req, settings, say=say)
    text = as_json(done.report) if args.format == "json" else as_text(done.report)
    sys.stdout.write(text)
    if args.out:
        write_json_atomic(Path(args.out), text)  # atomic, whatever the format
    if done.bugs:
        print(f"sqlcanary: {done.bugs} audit detector run(s) hit an internal error (a bug)", file=sys.stderr)
        return EXIT_BUG
    return EXIT_GATE if args.strict and done.report.strict_exit() else EXIT_OK
