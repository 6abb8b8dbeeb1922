"""The `sqlcanary` command: argparse; each subcommand lives in bot/commands/<name>.py and returns an exit code."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK, error_boundary
from bot.base.streams import reader_may_leave

# (command, module under bot/commands, help): each module has add_arguments(parser) and
# main(args, settings) -> int.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("init", "init", "start a project: sqlcanary.yml, a suite with two cases, an agent and the workflow"),
    ("validate", "validate", "check config, suite and KB (no database, no agent): every error at once"),
    ("run", "run", "run a benchmark suite through an agent and judge every case"),
    (
        "audit",
        "audit",
        "suspect golds: audit the answer key on the suite's fixtures before blaming the agent",
    ),
    ("rescore", "rescore", "judge a saved run's predictions again (no agent call)"),
    ("import", "import_", "turn a public benchmark into a sqlcanary suite"),
    ("compare", "compare", "which cases a change broke or fixed: compare a base and a head run"),
    ("check", "check", "the local PR check: evaluate base and head commits and compare them"),
    ("merge", "merge", "join the RunResults of `run --shard I/N` jobs into one"),
    ("sweep", "sweep", "a sweep over settings: `run` it here, `plan` its matrix, `report` one table"),
    ("report", "report", "render a run, or the change from a base run: md, summary, html, junit, json"),
    ("show", "show", "one case or a few of a saved run in the terminal: why it fails, gold, prediction diff"),
    ("repair", "repair", "ask an LLM for KB edits that fix failing cases; keep the proven ones"),
    ("llm", "llm", "`llm serve --replay FILE`: scripted LLM replies at an OpenAI-compatible URL"),
    ("db", "db", "the PostgreSQL sqlcanary uses: `db status`, `db start`, `db stop`, `db clean`"),
    ("action", "action", "run as the GitHub Action (reads INPUT_* and GITHUB_*; see action.yml)"),
)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. With `argv`, only the module of the command it names is imported (every command is listed
    for `--help` all the same): `sqlcanary run` does not pay for PyGithub, openai or the report templates, and
    each child run of a check starts that much sooner. Without it, every command's options are there."""
    named = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    parser = argparse.ArgumentParser(prog="sqlcanary", description="Keep text-to-SQL agents honest.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name, help_text in COMMANDS:
        p = sub.add_parser(name, help=help_text)
        if argv is None or name == named:
            module = importlib.import_module(f"bot.commands.{module_name}")
            module.add_arguments(p)
            p.set_defaults(func=module.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors are bad input
        return EXIT_OK if exc.code in (0, None) else EXIT_BAD_INPUT
    if args.version:  # imports nothing else: a start-up of its own (benchmarks/perf/cli_start.py)
        from bot.base.version import sqlcanary_version

        print(f"sqlcanary {sqlcanary_version()}")
        return EXIT_OK
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    import logging

    from bot.base.settings import Settings

    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its parse fallbacks are not the user's business
    code = [EXIT_OK]
    with reader_may_leave(), error_boundary(code):
        settings = Settings.from_environ(os.environ)  # the only place the CLI reads the environment
        code[0] = args.func(args, settings)
    return code[0]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
