"""`sqlcanary rescore RUN.json`: judge the saved predictions again, without the agent."""

from __future__ import annotations

import argparse

from bot.base.errors import ConfigError
from bot.base.results import read_run
from bot.base.settings import Settings
from bot.commands import run as run_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_file", metavar="RUN.json", help="a saved RunResult")
    run_command.add_arguments(p)


def main(args: argparse.Namespace, settings: Settings) -> int:
    args.agent = f"run:{args.run_file}"
    if not args.suite:
        saved = read_run(args.run_file).meta.suite_path
        if not saved:
            raise ConfigError(
                "the run does not say where its suite is: pass the suite folder", path=args.run_file
            )
        args.suite = saved
    return run_command.main(args, settings)
