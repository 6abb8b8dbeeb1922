"""The repair's edits of KB files, atomic and undone after a crash.

`Transaction` writes each file atomically (bot.kb.files.write_bytes_atomic) and keeps a journal of the original
bytes under `<root>/.sqlcanary/repair-journal/`, so an interrupted repair is undone by `revert()` (Ctrl-C,
SIGTERM, any exception) or by `recover()` on the next start (SIGKILL, power loss).
"""

from __future__ import annotations

import json
import shutil
import signal
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from bot.kb.files import KBFiles, fsync_dir, write_bytes_atomic

JOURNAL_DIR = ".sqlcanary/repair-journal"


def _set_file(target: Path, data: bytes | None) -> None:
    if data is None:
        if target.exists():
            target.unlink()
            fsync_dir(target.parent)
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
