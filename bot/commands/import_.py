"""`sqlcanary import defog SRC --out DIR`, `sqlcanary import bird-critic FILE.jsonl --db-dir DUMPS --out DIR`, and
`sqlcanary import spider|bird FILE.json --db-dir DATABASES --out DIR` (question/SQL pairs over SQLite databases).

`--audit`: the imported suite is audited as `sqlcanary audit DIR` audits it (bot.audit), and the report is written
beside it as DIR/audit.json (the `--format json` document). Off by default: an import is a file conversion that
needs no database, and an audit loads every fixture into PostgreSQL (BIRD's databases take minutes)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.base.errors import EXIT_BUG, EXIT_OK, ConfigError
from bot.base.results import write_json_atomic
from bot.base.settings import Settings

AUDIT_FILE = "audit.json"  # beside the imported suite (`--audit`)


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
    p.add_argument(
        "--audit",
        action="store_true",
        help="also audit the imported golds (sqlcanary audit) and write the report to OUT/audit.json; needs "
        "PostgreSQL (--dsn, DATABASE_URL or an embedded server)",
    )
    p.add_argument(
        "--dsn", help="--audit: the PostgreSQL to use (default: DATABASE_URL, then an embedded server)"
    )
    p.add_argument(
        "--postgres", choices=["auto", "embedded", "docker"], help="--audit: where PostgreSQL comes from"
    )


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
    if not args.audit:
        print(
            f"note: the golds were not audited; `sqlcanary audit {report.suite_dir}` (or --audit) checks them"
        )
        return EXIT_OK
    return _audit(report.suite_dir, args, settings)


def _audit(suite_dir: Path, args: argparse.Namespace, settings: Settings) -> int:
    """The imported suite's audit, written to suite_dir/audit.json; advisory (exit 0), 3 when a detector hit a
    bug (the report is written all the same)."""
    from bot.audit.pipeline import AuditRequest, audit_request
    from bot.audit.render import as_json

    done = audit_request(AuditRequest(suite=str(suite_dir), dsn=args.dsn, postgres=args.postgres), settings)
    target = suite_dir / AUDIT_FILE
    write_json_atomic(target, as_json(done.report))
    report = done.report
    cases = len({s.case_id for s in report.suspects})
    print(
        f"audit: {len(report.suspects)} suspect(s) in {cases} of {report.audited} gold(s), written to {target}"
    )
    if done.bugs:
        print(f"sqlcanary: {done.bugs} audit detector run(s) hit an internal error (a bug)", file=sys.stderr)
        return EXIT_BUG
    return EXIT_OK
