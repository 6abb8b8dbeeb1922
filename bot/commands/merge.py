"""`sqlcanary merge RUN.json... --out FILE`: join the shards of `run --shard I/N` (bot.run.merge)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.base.errors import EXIT_OK
from bot.base.results import read_run, write_run
from bot.base.settings import Settings
from bot.report.console import summary_table
from bot.run.merge import merge_runs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN.json", help="the shards' RunResult files")
    p.add_argument("--out", required=True, help="where to write the merged RunResult")
    p.add_argument("--partial", action="store_true", help="merge even when some shards are missing")


def main(args: argparse.Namespace, settings: Settings) -> int:
    runs = [(path, read_run(path)) for path in args.runs]
    merged = merge_runs(runs, partial=args.partial)
    write_run(Path(args.out), merged)
    print(summary_table(merged))
    print(f"\nmerged {len(runs)} shard(s), {len(merged.cases)} case(s), into {args.out}")
    return EXIT_OK
