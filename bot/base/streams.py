"""Standard output whose reader may leave early (`sqlcanary run -q | head -1`, `db status | head -1`).

When the reader closes the pipe, the rest of what the command prints is thrown away, as if it went to /dev/null,
and the command carries on: the files it writes are written and its exit code is its own (a regression still
exits 1). No "internal error", no traceback, no lost `--out` file."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class ReaderGone:
    """A text stream that, once a write or flush finds its pipe closed, points its file descriptor at
    /dev/null and keeps accepting text."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return  # not a real file (a test's capture): nothing to redirect
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)  # what the stream still buffers goes there at its next flush
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:  # isatty(), fileno(), encoding, ... of the stream itself
        return getattr(self._stream, name)


@contextlib.contextmanager
def reader_may_leave() -> Iterator[None]:
    """sys.stdout and sys.stderr as ReaderGone streams for the duration; the streams themselves are put back."""
    saved = sys.stdout, sys.stderr
    sys.stdout = ReaderGone(sys.stdout)  # type: ignore[assignment]
    sys.stderr = ReaderGone(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout.flush()  # while wrapped: a pipe closed by now is seen here, not at the interpreter's exit
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved
