"""A long-lived agent process spoken to in JSON lines: its stdout split into capped lines on a thread, requests
written with a deadline, the tail of its stderr kept, and a stop that kills whatever it started."""

from __future__ import annotations

import os
import queue
import select
import selectors
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bot.agents.pipes import CHUNK, POLL_S, STDERR_KEEP, STDOUT_CAP, kill_group, start, text_tail
from bot.agents.sandbox import Sandbox


@dataclass(frozen=True)
class StreamEvent:
    """From a long-lived agent's stdout: a `line` (without its newline); `eof` with what followed the last newline;
    `too_big`: a line passed the cap (reading stopped)."""

    kind: Literal["line", "eof", "too_big"]
    data: bytes = b""


class LineProcess:
    """A long-lived agent: its stdout split into lines on a thread (each at most `cap` bytes, at most a few lines
    buffered, so a flood cannot fill memory), the tail of its stderr kept."""

    def __init__(
        self,
        argv: list[str],
        cwd: str,
        *,
        cap: int = STDOUT_CAP,
        env: Mapping[str, str] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.proc = start(argv, cwd, env=env, sandbox=sandbox)
        assert self.proc.stderr
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.cap = cap
        self.events: queue.Queue[StreamEvent] = queue.Queue(maxsize=8)
        self.stopped = False  # stopped by sqlcanary (it broke the protocol, or the run is over): never reused
        self._closing = threading.Event()
        self._err = bytearray()
        self._err_lock = threading.Lock()  # the drainer and stderr_tail both read the pipe (non-blocking)
        self._err_eof = False
        self._err_done = threading.Event()
        self._stdout_done = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def usable(self) -> bool:
        return not self.stopped and self.proc.poll() is None

    def send(self, data: bytes, *, timeout_s: float) -> bool:
        """Write one request; False if the agent did not take it in time. Raises OSError if it is gone."""
        assert self.proc.stdin
        view, fd = memoryview(data), self.proc.stdin.fileno()
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_WRITE)
            while view:
                if not sel.select(max(0.0, deadline - time.monotonic())):
                    return False
                view = view[os.write(fd, view[: select.PIPE_BUF]) :]
        return True

    def wait_exit(self, timeout_s: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stderr_tail(self, *, settle_s: float = 0.0) -> str:
        """The tail of its stderr, including what is in the pipe right now: an agent writes its log before its
        answer, so those lines are in the pipe by the time the answer is read, whether or not the drainer thread
        got to them yet."""
        self._err_done.wait(settle_s)
        with self._err_lock:
            self._read_stderr()
            return text_tail(self._err)

    def stop(self) -> None:
        """Kill it and whatever it started; once it exited, only while a child of it still holds its stdout (the
        group is alive then, so its id cannot have been reused)."""
        if self.stopped:
            return
        self.stopped = True
        self._closing.set()
        if self.proc.poll() is None or not self._stdout_done.is_set():
            kill_group(self.proc)

    def _put(self, event: StreamEvent) -> bool:
        while not self._closing.is_set():
            try:
                self.events.put(event, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _pump(self) -> None:
        try:
            self._split_lines()
        finally:
            self._stdout_done.set()

    def _split_lines(self) -> None:
        assert self.proc.stdout
        buf = bytearray()
        with self.proc.stdout as stream:
            while True:
                chunk = stream.read(CHUNK)
                if not chunk:
                    self._put(StreamEvent("eof", bytes(buf)))
                    return
                buf += chunk
                while (nl := buf.find(b"\n")) >= 0:
                    if not self._put(StreamEvent("line", bytes(buf[:nl]))):
                        return
                    del buf[: nl + 1]
                if len(buf) > self.cap:
                    self._put(StreamEvent("too_big"))
                    # Discard the rest until it is stopped: closing the pipe now would only add a broken-pipe
                    # traceback to the agent's stderr, hiding what it said before.
                    while stream.read(CHUNK):
                        pass
                    return

    def _drain_stderr(self) -> None:
        """Keep reading stderr, so an agent that logs a lot never blocks on a full pipe."""
        assert self.proc.stderr
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stderr, selectors.EVENT_READ)
            while not self._err_eof:
                sel.select(POLL_S)
                with self._err_lock:
                    self._read_stderr()
        self._err_done.set()

    def _read_stderr(self) -> None:
        """What the pipe holds now (under _err_lock); at EOF the pipe is closed."""
        assert self.proc.stderr
        while not self._err_eof:
            try:
                chunk = os.read(self.proc.stderr.fileno(), CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self._err_eof = True
                self.proc.stderr.close()
                return
            self._err += chunk
            del self._err[:-STDERR_KEEP]
