"""What an agent's user id could leave behind for a later step, removed when its sandbox closes (after every
process of the id is dead, so nothing recreates it): files, folders, FIFOs and unix sockets it made in the
folders every user may write (/tmp, /var/tmp, /dev/shm with POSIX shared memory and semaphores, /dev/mqueue,
/run/lock, and any world-writable folder below them), and the System V shared memory segments, semaphore sets and
message queues it created or owns (/proc/sysvipc). Its home is the sandbox's to remove. Nothing is followed:
links are removed as links, and only folders the id could write into are walked."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import sys
from pathlib import Path

SHARED_FOLDERS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/dev/mqueue"), Path("/run/lock"))
_IPC_RMID = 0
_IPC = (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid"))  # /proc/sysvipc/<kind>, its id column


def remove_files_of(uid: int, folders: tuple[Path, ...] = SHARED_FOLDERS) -> list[str]:
    """Remove every entry `uid` owns in `folders` and in the world-writable folders below them; their paths."""
    removed: list[str] = []
    seen: set[tuple[int, int]] = set()
    todo = [f for f in folders if f.is_dir() and not f.is_symlink()]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == uid:
                _remove(Path(entry.path), is_dir=stat.S_ISDIR(st.st_mode))
                removed.append(entry.path)
            elif (
                stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH and (st.st_dev, st.st_ino) not in seen
            ):
                seen.add((st.st_dev, st.st_ino))  # another user's folder that the id could write into too
                todo.append(Path(entry.path))
    return removed


def _remove(path: Path, *, is_dir: bool) -> None:
    with contextlib.suppress(OSError):
        if is_dir:
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()


def ipc_of(uid: int, sysvipc: Path = Path("/proc/sysvipc")) -> list[tuple[str, int]]:
    """(kind, id) of every System V IPC object `uid` owns or created."""
    found = []
    for kind, column in _IPC:
        try:
            lines = (sysvipc / kind).read_text().splitlines()
        except OSError:
            continue
        header = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(header, line.split(), strict=False))
            if str(uid) in (row.get("uid"), row.get("cuid")) and row.get(column, "").isdigit():
                found.append((kind, int(row[column])))
    return found


def remove_ipc_of(uid: int) -> list[str]:
    """Remove (IPC_RMID, as root) every System V IPC object of `uid`; `kind id` of each."""
    if not sys.platform.startswith("linux"):
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    removed = []
    for kind, ident in ipc_of(uid):
        if kind == "sem":
            done = libc.semctl(ident, 0, _IPC_RMID)
        else:
            done = getattr(libc, f"{kind}ctl")(ident, _IPC_RMID, None)
        if done == 0:
            removed.append(f"{kind} {ident}")
    return removed


def remove_leftovers(uid: int) -> list[str]:
    """Everything of `uid` in the shared folders and System V IPC, removed; what was removed."""
    return [*remove_files_of(uid), *remove_ipc_of(uid)]
