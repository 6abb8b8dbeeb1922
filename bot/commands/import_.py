"""`sqlcanary import defog SRC --out DIR` and `sqlcanary import bird-critic FILE.jsonl --db-dir DUMPS --out DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.base.errors import EXIT_OK, ConfigError
from bot.base.settings import Settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", choices=["defog", "bird-critic"], help="which benchmark")
    p.add_argument("src", help="defog: the dataset folder (db/, questions/); bird-critic: the JSONL file")
    p.add_argument("--db-dir", help="bird-critic: folder of database dumps")
    p.add_argument("--out", required=True, help="the suite folder to write")


def main(args: argparse.Namespace, settings: Settings) -> int:  # noqa: ARG001
    from bot.cases.importers import bird_critic, defog

    if args.source == "defog":
        report = defog.import_defog(Path(args.src), Path(args.out))
    else:
        if not args.db_dir:
            raise ConfigError("import bird-critic needs --db-dir DUMPS")
        report = bird_critic.import_bird_critic(Path(args.src), db_dir=Path(args.db_dir), out=Path(args.out))
    for warning in report.warnings:
        print(f"warning: {warning}")
    print(f"wrote {report.cases} case(s) over {len(report.databases)} database(s) to {report.suite_dir}")
    return EXIT_OK
