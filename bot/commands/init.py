"""`sqlcanary init [DIR]`: a project that runs green at once (bot.config.scaffold): sqlcanary.yml, a suite with two
cases and a tiny fixture, a KB, an example `command:` agent and the pull-request workflow. Never overwrites a file:
one that exists already and nothing is written (exit 2, naming it)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bot.base.errors import EXIT_OK
from bot.base.settings import Settings
from bot.config.scaffold import gitignore_hint, write_init


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="where to write the project (default: here)"
    )


def main(args: argparse.Namespace, settings: Settings) -> int:
    folder = Path(args.dir)
    written = write_init(folder)
    cwd = Path.cwd().resolve()
    for path in written:
        shown = os.path.relpath(path.resolve(), cwd) if path.resolve().is_relative_to(cwd) else str(path)
        print(f"wrote {shown}")
    hint = gitignore_hint(folder)
    if hint:
        print(hint)
    here = "" if folder.resolve() == cwd else f"cd {args.dir} && "
    print(
        f"\nNext: `{here}sqlcanary run` runs the two example cases through agent.py (both pass); "
        "`sqlcanary validate` checks the config, the suite and the KB. Then point `agent:` in sqlcanary.yml at "
        "your agent and add your cases under cases/."
    )
    return EXIT_OK
