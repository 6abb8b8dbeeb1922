"""`sqlcanary rescore RUN.json`: judge the saved predictions again, without the agent."""

from __future__ import annotations

import argparse

from bot.base.errors import ConfigError
from bot.base.results import read_run
from bot.base.settings import Settings
from bot.commands.common import add_run_command_arguments, show_run
from bot.run.request import RunRequest


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_file", metavar="RUN.json", help="a saved RunResult")
    add_run_command_arguments(p)


def main(args: argparse.Namespace, settings: Settings) -> int:
    args.agent = f"run:{args.run_file}"
    if not args.suite:
        saved = read_run(args.run_file).meta.suite_path
        if not saved:
            raise ConfigError(
                "the run does not say where its suite is: pass the suite folder", path=args.run_file
            )
        args.suite = saved
    return show_run(RunRequest.from_args(args), settings)
