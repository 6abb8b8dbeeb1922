"""`sqlcanary rescore RUN.json`: judge the saved predictions again, without the agent."""

from __future__ import annotations

import argparse

from bot.commands import run as run_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_file", metavar="RUN.json", help="a saved RunResult")
    run_command.add_arguments(p)


def main(args: argparse.Namespace) -> int:
    args.agent = f"run:{args.run_file}"
    return run_command.main(args)
