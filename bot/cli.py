"""The `sqlcanary` command: argparse; each subcommand lives in bot/commands/<name>.py and returns an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bot.errors import EXIT_BAD_INPUT, EXIT_OK, error_boundary


def build_parser() -> argparse.ArgumentParser:
    from bot.commands import import_, rescore, run

    parser = argparse.ArgumentParser(prog="sqlcanary", description="Keep text-to-SQL agents honest.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("run", help="run a benchmark suite through an agent and judge every case")
    run.add_arguments(p)
    p.set_defaults(func=run.main)
    p = sub.add_parser("rescore", help="judge a saved run's predictions again (no agent call)")
    rescore.add_arguments(p)
    p.set_defaults(func=rescore.main)
    p = sub.add_parser("import", help="turn a public benchmark into a sqlcanary suite")
    import_.add_arguments(p)
    p.set_defaults(func=import_.main)
    from bot.commands import compare

    p = sub.add_parser("compare", help="which cases a change broke or fixed: compare a base and a head run")
    compare.add_arguments(p)
    p.set_defaults(func=compare.main)
    from bot.commands import check, merge

    p = sub.add_parser("check", help="the local PR check: evaluate base and head commits and compare them")
    check.add_arguments(p)
    p.set_defaults(func=check.main)
    p = sub.add_parser("merge", help="join the RunResults of `run --shard I/N` jobs into one")
    merge.add_arguments(p)
    p.set_defaults(func=merge.main)
    from bot.commands import report

    p = sub.add_parser(
        "report", help="render a run, or the change from a base run: md, summary, html, junit, json"
    )
    report.add_arguments(p)
    p.set_defaults(func=report.main)
    from bot.commands import repair

    p = sub.add_parser("repair", help="ask an LLM for KB edits that fix failing cases; keep proven ones")
    repair.add_arguments(p)
    p.set_defaults(func=repair.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors are bad input
        return EXIT_OK if exc.code in (0, None) else EXIT_BAD_INPUT
    if args.version:
        from bot.runner import sqlcanary_version

        print(f"sqlcanary {sqlcanary_version()}")
        return EXIT_OK
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    import logging

    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its parse fallbacks are not the user's business
    code = [EXIT_OK]
    with error_boundary(code):
        code[0] = args.func(args)
    return code[0]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
