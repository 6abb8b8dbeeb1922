"""Knowledge-base files as files: which a repair may touch and how a path reaches one, and writes that a reader
sees whole.

`KBFiles.resolve(path)` is the only way from a path the model wrote to a file on disk: it refuses absolute
paths, `..`, `.git`/`.github`, symlinks and hard links (a link is never followed), code files and anything the config's
`kb.paths` globs do not match. `write_bytes_atomic` writes through a temp file + fsync + rename. The repair's
crash-safe edits over these are bot.repair.transaction's; attribution writes its private copies with them too.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from bot.base.errors import SqlcanaryError
from bot.config.model import KB_SUFFIXES, Config
from bot.config.model import NEVER_WRITTEN_DIRS as FORBIDDEN_DIRS

MAX_FILE_BYTES = 256 * 1024


class RefusedPath(SqlcanaryError):
    """A path the repair loop must not write; the message says why (it is shown to the model)."""


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A `kb.paths` glob as a regex over posix paths: `**/` any folders (or none), `*` and `?` within a name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _lexical_checks(path: str) -> PurePosixPath:
    if not isinstance(path, str) or not path.strip():
        raise RefusedPath("empty path")
    if "\x00" in path or "\\" in path or any(ord(ch) < 32 for ch in path):
        raise RefusedPath(f"{path!r}: control characters or backslashes are not allowed in a path")
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", path):
        raise RefusedPath(f"{path!r}: absolute paths are refused; give a path relative to the config folder")
    parts = path.split("/")
    if any(p == ".." for p in parts):
        raise RefusedPath(f"{path!r}: `..` is refused")
    if any(p in ("", ".") for p in parts):
        raise RefusedPath(f"{path!r}: empty or `.` path segments are refused")
    if any(p.lower() in FORBIDDEN_DIRS for p in parts):
        raise RefusedPath(f"{path!r}: files under .git/, .github/ or .sqlcanary/ are never written")
    return PurePosixPath(path)


@dataclass(frozen=True)
class KBFiles:
    """The files under `root` that the globs match; every path is relative to `root` (the config folder)."""

    root: Path
    globs: tuple[str, ...]

    @classmethod
    def from_config(cls, config: Config) -> KBFiles:
        if not config.kb.paths:
            raise SqlcanaryError(
                "sqlcanary.yml sets no `kb.paths`: the repair loop does not know the KB files"
            )
        bad = [g for g in config.kb.paths if g.startswith("/") or ".." in g.split("/")]
        if bad:
            raise SqlcanaryError(f"kb.paths must be relative globs without `..`: {', '.join(bad)}")
        return cls(root=Path(config.base_dir).resolve(), globs=tuple(config.kb.paths))

    def allowed(self, rel: str) -> str | None:
        """Why `rel` (a clean relative posix path) may not be written, or None when it may."""
        if PurePosixPath(rel).suffix.lower() not in KB_SUFFIXES:
            return f"{rel!r}: only {', '.join(KB_SUFFIXES)} files are KB files (no code)"
        if not any(glob_regex(g).match(rel) for g in self.globs):
            return f"{rel!r}: not matched by the configured kb.paths ({', '.join(self.globs)})"
        return None

    def resolve(self, path: str) -> Path:
        """The file behind `path`, or RefusedPath; it need not exist (creations). No link is followed: a symlink
        anywhere below the root, or a file with another name (a hard link), is refused; an existing one must be
        a regular file."""
        rel = _lexical_checks(path)
        reason = self.allowed(rel.as_posix())
        if reason:
            raise RefusedPath(reason)
        root = self.root.resolve()
        target = root.joinpath(*rel.parts)
        for depth in range(1, len(rel.parts) + 1):
            try:
                st = root.joinpath(*rel.parts[:depth]).lstat()
            except (FileNotFoundError, NotADirectoryError):
                return target  # the rest does not exist yet
            named = "/".join(rel.parts[:depth])
            if stat.S_ISLNK(st.st_mode):
                raise RefusedPath(
                    f"{path!r}: {named} is a symlink; the repair writes regular files only and never follows a "
                    "link (it could lead outside the KB or the repository)"
                )
        if not stat.S_ISREG(st.st_mode):
            raise RefusedPath(f"{path!r}: not a regular file")
        if st.st_nlink > 1:
            raise RefusedPath(f"{path!r}: a hard link (another name shares the file): never written")
        return target

    def relative(self, path: str) -> str:
        """`path` checked and given back relative to the root (the name recorded in diffs and journals)."""
        return self.resolve(path).relative_to(self.root.resolve()).as_posix()

    def read(self, path: str) -> str | None:
        """The text of a KB file, None when it does not exist (RefusedPath when it may not be read)."""
        target = self.resolve(path)
        if not target.is_file():
            return None
        if target.stat().st_size > MAX_FILE_BYTES:
            raise RefusedPath(f"{path!r}: larger than {MAX_FILE_BYTES} bytes")
        return target.read_text(encoding="utf-8")

    def files(self) -> dict[str, str]:
        """Every existing KB file the globs match: {relative path: text} (unreadable ones skipped)."""
        out: dict[str, str] = {}
        for pattern in self.globs:
            for p in sorted(self.root.glob(pattern)):
                rel = p.relative_to(self.root).as_posix()
                if p.is_file() and rel not in out:
                    try:
                        text = self.read(rel)
                    except (RefusedPath, OSError, UnicodeDecodeError):
                        continue
                    if text is not None:
                        out[rel] = text
        return out


# -- atomic writes --------------------------------------------------------------------------------------


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(target: Path, data: bytes, *, mode: int | None = None) -> None:
    """Temp file beside `target`, fsync, rename over it, fsync the folder: a reader sees old or new, never half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
