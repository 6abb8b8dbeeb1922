"""A suite's fixtures as bytes, not paths: what its loader read is what a run loads.

A fixture is named by a path in the suite, and in a check the suite is the pull request's. Its reader parses it
as an unprivileged user of its own (bot.check.head_reader), but the head's `sqlcanary run` that loads the fixture
into PostgreSQL runs as root. A path can mean something else to root than to the reader: a file only root may
read (`/root/...`, `/proc/1/environ`), or a path whose target depends on who opens it (`/proc/self/environ`, a
link in a folder the agent's user may write). So the loader keeps the SHA-256 of every fixture as it read it
(`Suite.fixture_digests`), and every consumer of a fixture's content (the template's fingerprint, its load, the
built-in agent's schema) takes it through `read_fixtures`: each file read once, its bytes checked against the
digest before anything uses them, or refused (exit 2) naming the file. Root never loads a byte of a fixture
that the reader, with the agent's privileges, did not read itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.base.errors import CaseFileError


@dataclass(frozen=True)
class FixtureFile:
    """One fixture file's bytes, as read once and checked (`path` is for messages and relative names)."""

    path: Path
    data: bytes

    def text(self) -> str:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CaseFileError(
                f"fixture: not UTF-8 text ({exc.reason} at byte {exc.start})", path=str(self.path)
            ) from None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path, *, what: str, line: int | None = None) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CaseFileError(f"{what}: cannot be read: {exc.strerror}", path=str(path), line=line) from None


def fixture_digest(path: Path, *, suite_file: str, line: int | None, db_label: str) -> str:
    """The SHA-256 of a fixture as the suite's loader reads it (an error names the suite file's line)."""
    try:
        return digest(path.read_bytes())
    except OSError as exc:
        raise CaseFileError(
            f"fixture {str(path)!r} of database {db_label!r} cannot be read: {exc.strerror}",
            path=suite_file,
            line=line,
        ) from None


def read_fixtures(files: Iterable[Path], digests: Mapping[str, str]) -> tuple[FixtureFile, ...]:
    """Each file's bytes, read once, each the bytes its suite's loader read (`digests`, by path): a file that
    has none, or reads otherwise now, is refused."""
    out = []
    for path in files:
        expected = digests.get(str(path))
        if expected is None:
            raise CaseFileError(
                "fixture: not one the suite's loader read (no digest of it was kept), so it is not loaded",
                path=str(path),
            )
        data = _read(path, what="fixture")
        if digest(data) != expected:
            raise CaseFileError(
                "fixture: its content is not what the suite's loader read (a file changed since, or a path that "
                "means another file to another process or user, such as /proc/self/...): refused, nothing of "
                "it was loaded",
                path=str(path),
            )
        out.append(FixtureFile(path, data))
    return tuple(out)


def trusted_fixtures(files: Iterable[Path]) -> tuple[FixtureFile, ...]:
    """Fixture files named by this process's own caller (a test, a benchmark, an importer), read as they are."""
    return tuple(FixtureFile(Path(p), _read(Path(p), what="fixture")) for p in files)
