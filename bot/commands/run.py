"""`sqlcanary run`: evaluate a suite with an agent and write a RunResult."""

from __future__ import annotations

import argparse

from bot.base.settings import Settings
from bot.commands.common import add_run_command_arguments, show_run
from bot.run.request import RunRequest


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_run_command_arguments(p)


def main(args: argparse.Namespace, settings: Settings) -> int:
    """Evaluate, print the summary, and say what the exit code means."""
    return show_run(RunRequest.from_args(args), settings)
