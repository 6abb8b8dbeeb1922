"""The embedded server's lifetime: started by the first command that needs it, stopped when the last one ends.

Every process that uses the embedded server on a data directory holds a shared `flock` on its lock file
(`users_file`) from before the server starts until it exits. At exit, a process that can turn its lock into an
exclusive one is the last user: it stops the server (SIGINT, PostgreSQL's fast shutdown), unless the server was
asked to stay (`sqlcanary db start` leaves `.pgNN.keep` beside the data directory; `db stop` removes it) or a
client that holds no lock (an older sqlcanary, psql) is connected. A process that starts while another stops
waits for the stop on its shared lock, then starts the server again. Starting a stopped server costs about
0.3 s; the templates stay on disk, so nothing is loaded again.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bot.base.errors import DatabaseError

_HELD: dict[Path, int] = {}  # data directory -> the fd of its shared lock
_ATTACHED: set[Path] = set()


def users_file(pgdata: Path) -> Path:
    """The lock file: in a folder of this user's under the temp folder, not beside the data (a cache folder that
    actions/cache saves must hold nothing of root's alone)."""
    folder = Path(tempfile.gettempdir()) / f"sqlcanary-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    digest = hashlib.sha256(str(pgdata.resolve()).encode()).hexdigest()[:16]
    return folder / f"{pgdata.name}-{digest}.users"


def keep_file(pgdata: Path) -> Path:
    return pgdata.parent / f".{pgdata.name}.keep"


def hold(pgdata: Path) -> None:
    """Take this process's shared lock on the server of `pgdata` (blocks while a last user stops it)."""
    key = pgdata.expanduser().absolute()
    if key in _HELD:
        return
    fd = os.open(users_file(key), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _HELD[key] = fd


def attach(pgdata: Path) -> None:
    """Stop the server of `pgdata` when this process exits, if it is then its last user (see the module)."""
    key = pgdata.expanduser().absolute()
    hold(key)
    if key not in _ATTACHED:
        _ATTACHED.add(key)
        atexit.register(_at_exit, key)


def _at_exit(pgdata: Path) -> None:
    with contextlib.suppress(Exception):  # exiting: a server left running is the worst outcome
        stop_if_last(pgdata)


def stop_if_last(pgdata: Path) -> bool:
    """Stop the server if no other process holds it, it was not asked to stay and no other client is connected;
    release this process's lock either way. True when it was stopped."""
    fd = _HELD.pop(pgdata, None)
    if fd is None:
        return False
    try:
        if keep_file(pgdata).exists():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another sqlcanary uses it
        info = status(pgdata)
        if info.pid is None or _other_clients(info):
            return False
        return stop(pgdata)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class EmbeddedStatus:
    pgdata: Path
    pid: int | None  # the postmaster's, None when not running
    port: int | None
    socket_dir: str | None
    kept: bool  # asked to stay (`db start`)

    @property
    def running(self) -> bool:
        return self.pid is not None


def status(pgdata: Path) -> EmbeddedStatus:
    lines: list[str] = []
    with contextlib.suppress(OSError, UnicodeDecodeError):
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    pid = int(lines[0]) if lines and lines[0].strip().isdigit() else None
    if pid is not None and not _is_server_of(pid, pgdata):
        pid = None
    port = int(lines[3]) if pid and len(lines) > 3 and lines[3].strip().isdigit() else None
    sock = lines[4].strip() if pid and len(lines) > 4 and lines[4].strip() else None
    return EmbeddedStatus(pgdata=pgdata, pid=pid, port=port, socket_dir=sock, kept=keep_file(pgdata).exists())


def _is_server_of(pid: int, pgdata: Path) -> bool:
    """Whether `pid` is a live (not zombie) postgres process serving `pgdata`."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
        return False
    wanted = {str(pgdata), str(pgdata.resolve())}
    return any(arg.decode(errors="replace") in wanted for arg in cmdline)


def _other_clients(info: EmbeddedStatus) -> bool:
    """Whether a client other than this check's connection is connected (one that holds no lock)."""
    import psycopg2

    if info.socket_dir is None:
        return False
    try:
        conn = psycopg2.connect(
            host=info.socket_dir,
            port=info.port or 5432,
            user="postgres",
            dbname="postgres",
            connect_timeout=5,
        )
    except psycopg2.Error:
        return False
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                "AND pid <> pg_backend_pid()"
            )
            row = cur.fetchone()
        return bool(row and row[0])
    finally:
        conn.close()


def stop(pgdata: Path, *, timeout: float = 30.0) -> bool:
    """Stop the server on `pgdata` (SIGINT: fast shutdown, open sessions are ended). True when one was running."""
    info = status(pgdata)
    if info.pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(info.pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _is_server_of(info.pid, pgdata):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.pid, os.WNOHANG)  # in a container this process may be its parent
            return True
        time.sleep(0.02)
    raise DatabaseError(
        f"the embedded PostgreSQL on {pgdata} (pid {info.pid}) did not stop within {timeout:.0f} s"
    )


def set_kept(pgdata: Path, kept: bool) -> None:
    if kept:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        keep_file(pgdata).write_text(
            "sqlcanary db start: the embedded server stays until `sqlcanary db stop`\n"
        )
    else:
        keep_file(pgdata).unlink(missing_ok=True)
