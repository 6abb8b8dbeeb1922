"""The user ids an agent's sandbox may take: which ids processes run as (from /proc), which ones /etc/passwd or
/etc/group name, and claiming a free one in UID_FIRST..UID_LAST under an exclusive lock, so that two evaluations
never share an id."""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import random
from collections.abc import Iterator
from pathlib import Path

from bot.base.errors import AgentError

UID_FIRST, UID_LAST = 61000, 64999  # inside the 65536 ids a container's user namespace usually maps


def processes_by_user() -> dict[int, list[int]]:
    """{user id: [pid, ...]} of every process that is not a zombie (real, effective, saved and fs ids)."""
    found: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue  # it just exited
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        for uid in {int(u) for u in fields.get("Uid", "").split()}:
            found.setdefault(uid, []).append(int(entry.name))
    return found


def _known_id(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            continue
    return False


def _lock(path: Path) -> int | None:
    """An exclusive lock on `path` (released when this process exits), or None when another evaluation holds it
    or removed the file meanwhile (its lock no longer guards the name)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino == os.stat(path, follow_symlinks=False).st_ino:
            return fd
    except (BlockingIOError, FileNotFoundError):
        pass
    os.close(fd)
    return None


def _candidates() -> Iterator[int]:
    start = random.randrange(UID_FIRST, UID_LAST + 1)
    for offset in range(UID_LAST - UID_FIRST + 1):
        yield UID_FIRST + (start - UID_FIRST + offset) % (UID_LAST - UID_FIRST + 1)


def claim_free_id(root: Path) -> tuple[int, int]:
    """A user id no process runs as and no passwd or group entry names, locked by `root`/<id>.lock: (the id, the
    lock's file descriptor, which the caller closes). Raises AgentError when none is free."""
    running = processes_by_user()
    for uid in _candidates():
        if uid in running or _known_id(uid):
            continue
        fd = _lock(root / f"{uid}.lock")
        if fd is None:
            continue
        if uid in processes_by_user():  # started between the scan and the lock
            os.close(fd)
            continue
        return uid, fd
    raise AgentError(f"no free user id in {UID_FIRST}-{UID_LAST} for the agent's sandbox")
