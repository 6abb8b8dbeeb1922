"""`sqlcanary import defog SRC --out DIR`, `sqlcanary import bird-critic FILE.jsonl --db-dir DUMPS --out DIR`, and
`sqlcanary import spider|bird FILE.json --db-dir DATABASES --out DIR` (question/SQL pairs over SQLite databases)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.base.errors import EXIT_OK, ConfigError
from bot.base.settings import Settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", choices=["defog", "bird-critic", "spider", "bird"], help="which benchmark")
    p.add_argument(
        "src",
        help="defog: the dataset folder (db/, questions/); bird-critic: the JSONL file; spider, bird: the JSON "
        "list of {question, query or SQL, db_id} pairs (Spider's dev.json, BIRD's dev.json)",
    )
    p.add_argument(
        "--db-dir",
        help="bird-critic: folder of database dumps; spider, bird: folder of <db_id>/<db_id>.sqlite (Spider's "
        "database/, BIRD's dev_databases/)",
    )
    p.add_argument("--out", required=True, help="the suite folder to write")


def main(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cases.importers import bird_critic, defog, import_pairs

    if args.source == "defog":
        report = defog.import_defog(Path(args.src), Path(args.out))
    elif args.source in ("spider", "bird"):
        if not args.db_dir:
            raise ConfigError(
                f"import {args.source} needs --db-dir DATABASES (one <db_id>/<db_id>.sqlite each)"
            )
        report = import_pairs(
            Path(args.src), db_dir=Path(args.db_dir), out=Path(args.out), benchmark=args.source
        )
    else:
        if not args.db_dir:
            raise ConfigError("import bird-critic needs --db-dir DUMPS")
        report = bird_critic.import_bird_critic(Path(args.src), db_dir=Path(args.db_dir), out=Path(args.out))
    for warning in report.warnings:
        print(f"warning: {warning}")
    cases, dbs = report.cases, len(report.databases)
    print(
        f"wrote {cases} case{'s' * (cases != 1)} over {dbs} database{'s' * (dbs != 1)} to {report.suite_dir}"
        + (f"; {len(report.skipped)} skipped (see the warnings)" if report.skipped else "")
    )
    return EXIT_OK
