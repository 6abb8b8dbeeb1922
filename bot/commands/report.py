"""`sqlcanary report`: render a saved run, or the change from a base run, as Markdown, HTML, JUnit or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from bot.base.errors import EXIT_OK, ConfigError, ResultFileError
from bot.base.results import RunResult, read_run, write_json_atomic
from bot.base.settings import Settings
from bot.commands.common import add_gate_arguments, gate_from_args
from bot.compare.comparison import Comparison, compare_runs
from bot.report.beside import runs_beside
from bot.report.render import FORMATS, render


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run", help="the (head) RunResult JSON, or a Comparison JSON written by `sqlcanary compare`"
    )
    p.add_argument("--base", help="the base RunResult JSON: report what changed from it")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="md",
        help="md: the PR comment; summary: the job summary; html: standalone report; junit: JUnit XML; "
        "json: the RunResult or Comparison (default: md)",
    )
    p.add_argument("--out", help="write the report here (default: standard output)")
    p.add_argument("--details-url", help="md/summary: link to the full report, shown when the text is cut")
    p.add_argument("--limit", type=int, help="md: characters (default 65536); summary: bytes (default 1 MiB)")
    p.add_argument("--force", action="store_true", help="with --base: compare runs judged by different rules")
    add_gate_arguments(p)  # with --base: the same gate as `compare`


def _read_comparison(path: str) -> Comparison | None:
    """A Comparison JSON, or None when the file holds something else (a RunResult)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ResultFileError("no such file", path=path) from exc
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    if not (isinstance(raw, dict) and "verdict" in raw and "overall" in raw):
        return None
    try:
        return Comparison.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ResultFileError(f"{where}: {first['msg']}", path=path) from exc


def main(args: argparse.Namespace, settings: Settings) -> int:
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be a positive number")
    comparison = _read_comparison(args.run)
    head: RunResult | None = None
    base: RunResult | None = None
    if comparison is None:
        head = read_run(args.run)
        if args.base:
            base = read_run(args.base)
            comparison = compare_runs(base, head, gate=gate_from_args(args), force=args.force)
    elif args.base:
        raise ConfigError(
            "--base needs a RunResult, but the file given is already a Comparison", path=args.run
        )
    if comparison is not None and head is None:  # check's base.json and head.json beside it: their latency
        base, head = runs_beside(args.run, comparison)
    if args.format == "junit" and head is None:
        raise ConfigError("JUnit XML needs the head RunResult, not a Comparison", path=args.run)
    subject = comparison if comparison is not None else head
    assert subject is not None
    text = render(args.format, subject, head=head, base=base, details_url=args.details_url, limit=args.limit)
    if args.out:
        write_json_atomic(args.out, text)
        print(f"sqlcanary: {args.format} report written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
