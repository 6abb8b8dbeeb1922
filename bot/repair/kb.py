"""Knowledge-base files the repair loop may touch, and edits that are atomic and survive a crash.

`KBFiles.resolve(path)` is the only way from a path the model wrote to a file on disk: it refuses absolute
paths, `..`, `.git`/`.github`, symlinks and hard links (a link is never followed), code files and anything the config's
`kb.paths` globs do not match. `Transaction` writes each file through a temp file + fsync + rename and keeps a
journal of the original bytes under `<root>/.sqlcanary/repair-journal/`, so an interrupted repair is undone by
`revert()` (Ctrl-C, SIGTERM, any exception) or by `recover()` on the next start (SIGKILL, power loss).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any

from bot.base.errors import SqlcanaryError
from bot.config.model import KB_SUFFIXES, Config
from bot.config.model import NEVER_WRITTEN_DIRS as FORBIDDEN_DIRS

JOURNAL_DIR = ".sqlcanary/repair-journal"
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


def _fsync_dir(folder: Path) -> None:
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
    _fsync_dir(target.parent)


def _set_file(target: Path, data: bytes | None) -> None:
    if data is None:
        if target.exists():
            target.unlink()
            _fsync_dir(target.parent)
        return
    mode = target.stat().st_mode & 0o777 if target.exists() else None
    write_bytes_atomic(target, data, mode=mode)


# -- the journal ------------------------------------------------------------------------------------------


def journal_root(kb: KBFiles) -> Path:
    return kb.root / JOURNAL_DIR


def _restore_journal(kb: KBFiles, folder: Path) -> list[str]:
    """Put back the original bytes listed in one journal folder; return the paths restored."""
    manifest = folder / "manifest.json"
    restored: list[str] = []
    if manifest.is_file():
        entries = json.loads(manifest.read_text(encoding="utf-8")).get("files", [])
        for entry in entries:
            rel = str(entry["path"])
            target = kb.resolve(rel)  # a forged journal cannot send writes outside the KB either
            backup = entry.get("backup")
            _set_file(target, (folder / backup).read_bytes() if backup else None)
            restored.append(rel)
    shutil.rmtree(folder, ignore_errors=True)
    return restored


def recover(kb: KBFiles) -> list[str]:
    """Undo every transaction a crashed repair left behind; return the KB paths put back."""
    base = journal_root(kb)
    if not base.is_dir():
        return []
    restored: list[str] = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        restored.extend(_restore_journal(kb, folder))
    return restored


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while files are put back, so a second Ctrl-C cannot half-revert."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class Transaction:
    """Edits to KB files that are all undone unless `commit()` is called.

    `apply(changes)` writes {path: new text or None (delete)} and returns the previous texts, which
    `apply` takes back to undo one step. Leaving the `with` block without `commit()` (an exception,
    KeyboardInterrupt or SIGTERM included) reverts every file to its bytes before the transaction."""

    def __init__(self, kb: KBFiles) -> None:
        self.kb = kb
        self.folder = journal_root(kb) / uuid.uuid4().hex
        self._entries: dict[str, dict[str, Any]] = {}
        self._closed = False
        self._old_term: Any = None

    def __enter__(self) -> Transaction:
        if threading.current_thread() is threading.main_thread():
            self._old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if not self._closed:
                self.revert()
        finally:
            if self._old_term is not None:
                signal.signal(signal.SIGTERM, self._old_term)
                self._old_term = None

    @property
    def touched(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def _journal(self, rel: str, target: Path) -> None:
        if rel in self._entries:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        backup = None
        if target.exists():
            backup = f"{len(self._entries):04d}.orig"
            write_bytes_atomic(self.folder / backup, target.read_bytes())
        self._entries[rel] = {"path": rel, "backup": backup}
        payload = json.dumps({"files": list(self._entries.values())}, indent=1).encode()
        write_bytes_atomic(self.folder / "manifest.json", payload)  # before the KB file changes

    def apply(self, changes: Mapping[str, str | None]) -> dict[str, str | None]:
        if self._closed:
            raise RuntimeError("transaction already closed")
        targets = {self.kb.relative(p): text for p, text in changes.items()}  # every path checked first
        previous: dict[str, str | None] = {}
        for rel, text in targets.items():
            target = self.kb.resolve(rel)
            previous[rel] = target.read_text(encoding="utf-8") if target.exists() else None
            self._journal(rel, target)
            _set_file(target, None if text is None else text.encode("utf-8"))
        return previous

    def commit(self) -> None:
        """Keep the edits: drop the journal."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self._closed = True

    def revert(self) -> list[str]:
        """Put every touched file back as it was before the transaction."""
        with _signals_deferred():
            restored = _restore_journal(self.kb, self.folder) if self.folder.exists() else []
            self._closed = True
        return restored
