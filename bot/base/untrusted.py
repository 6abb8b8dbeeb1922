"""Reading a folder of untrusted files (a downloaded artifact: whoever ran the uploading job wrote it, and a fork's
or a matrix job's workflow runs the code under test). Nothing in it is executed, imported or followed: the folder
is walked without following links; a symbolic link, a special file, a file over the size limit, a folder over the
total or entry limits, a file named outside its folder, JSON that is not the expected schema and version: each is
a `ResultFileError` (exit 2) naming the file (relative to the folder) and the reason. The texts inside are data for
templates that escape them."""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.base.errors import ResultFileError

MiB = 1024 * 1024
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class FolderLimits:
    file_bytes: int = 32 * MiB  # one JSON file (a RunResult is a few KB per case)
    total_bytes: int = 256 * MiB  # everything under the folder
    entries: int = 10_000  # files and folders under it


def refused(where: str, why: str) -> ResultFileError:
    return ResultFileError(f"untrusted artifact refused: {why}", path=where)


def folder_root(path: Path, *, what: str = "input `artifacts`") -> Path:
    """The folder `path` names, resolved; it must be an existing folder and not itself a link."""
    if path.is_symlink() or not path.is_dir():
        raise ResultFileError(
            f"{what}: not a folder (download the artifacts there first; a symbolic link is refused)",
            path=str(path),
        )
    return path.resolve()


def walk_files(root: Path, limits: FolderLimits) -> list[Path]:
    """Every regular file under `root` (sorted), never following a link; refuses links, special files and
    sizes or counts over `limits`, before any file is read."""
    total, entries = 0, 0
    files: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as found:
            for entry in found:
                entries += 1
                where = str(Path(entry.path).relative_to(root))
                if entries > limits.entries:
                    raise refused(where, f"more than {limits.entries} files and folders")
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    raise refused(where, "a symbolic link (an artifact holds plain files only)")
                if stat.S_ISDIR(info.st_mode):
                    stack.append(Path(entry.path))
                    continue
                if not stat.S_ISREG(info.st_mode):
                    raise refused(where, "not a regular file")
                if info.st_size > limits.file_bytes:
                    raise refused(
                        where, f"{info.st_size} bytes, over the {limits.file_bytes} bytes allowed per file"
                    )
                total += info.st_size
                if total > limits.total_bytes:
                    raise refused(where, f"the folder holds over {limits.total_bytes} bytes")
                files.append(Path(entry.path))
    return sorted(files)


def inside(folder: Path, name: str, where: str) -> Path:
    """`folder/name`, which must stay inside `folder` (`where` names the file that named it)."""
    path = (folder / name).resolve()
    if not path.is_relative_to(folder) or path == folder:
        raise refused(where, f"names {name!r}, a path outside its folder")
    return path


def read_bytes(path: Path, where: str, limit: int) -> bytes:
    """The file's bytes, opened without following a link (a file swapped for one after the walk is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        why = "a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or "cannot be read")
        raise refused(where, why) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise refused(where, "not a regular file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise refused(where, f"over the {limit} bytes allowed per file")
    return data


def read_json_object(path: Path, where: str, limit: int) -> dict[str, Any]:
    try:
        data = json.loads(read_bytes(path, where, limit))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise refused(where, f"not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise refused(where, "not a JSON object")
    return data


def validated(kind: type[M], data: dict[str, Any], where: str, version: int) -> M:
    """`data` as a `kind`, when its `schema_version` is `version` and it passes the model's validation."""
    got = data.get("schema_version")
    if got != version:
        shown = got if isinstance(got, int) else type(got).__name__  # never the untrusted text itself
        raise refused(
            where, f"schema_version {shown!r} is not {version} (written by another sqlcanary version?)"
        )
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = " ".join(".".join(str(p) for p in first["loc"]).split())[:80] or "(file)"  # one line
        raise refused(where, f"not a valid {kind.__name__}: {at}: {first['msg']}") from None
