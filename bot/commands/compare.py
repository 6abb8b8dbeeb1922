"""`sqlcanary compare BASE.json HEAD.json`: which cases a change broke or fixed, and does the gate pass.

The gate's flags (bot.commands.common) are shared with `sqlcanary check`, so both read the same flags.
"""

from __future__ import annotations

import argparse

from bot.base.results import read_run, write_json_atomic
from bot.base.settings import Settings
from bot.commands.common import add_gate_arguments, gate_from_args
from bot.compare.comparison import compare_runs
from bot.compare.gate import exit_code
from bot.report.compare_text import render_summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", help="the base RunResult JSON (e.g. the target branch's run)")
    p.add_argument("head", help="the head RunResult JSON (the change under review)")
    p.add_argument(
        "--force",
        action="store_true",
        help="compare even when the suite, case selection, fixtures, preset or evaluator version differ "
        "(the reasons become warnings)",
    )
    p.add_argument("--out", help="write the Comparison JSON here")
    add_gate_arguments(p)


def main(args: argparse.Namespace, settings: Settings) -> int:
    gate = gate_from_args(args)
    base, head = read_run(args.base), read_run(args.head)
    comparison = compare_runs(base, head, gate=gate, force=args.force)
    print(render_summary(comparison))
    if args.out:
        write_json_atomic(args.out, comparison.model_dump_json(indent=2) + "\n")
        print(f"\ncomparison written to {args.out}")
    return exit_code(comparison.verdict)
