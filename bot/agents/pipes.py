"""Bytes to and from a command agent's process, with limits. The agent is someone else's program: its output is
read as bytes (capped, decoded strictly by the caller), a closed stdout or a dead process is noticed at once
instead of at the timeout, and a program that cannot start is refused before the first case."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import selectors
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bot.base.errors import AgentError

if TYPE_CHECKING:
    from bot.agents.sandbox import Sandbox

STDOUT_CAP = 1 << 20  # bytes of stdout one case may produce; past it the agent is killed
STDERR_KEEP = 4000  # bytes of stderr kept (the tail)
GRACE_S = 1.0  # once stdout closes or the process exits, how long the other may take to follow
POLL_S = 0.25  # how often a wait looks at whether the process is still alive
_CHUNK = 65536


def size_words(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} bytes"


def resolve_argv(cmd: str, base_dir: str, *, env: Mapping[str, str] | None = None) -> list[str]:
    """Split CMD and make sure its program can start, so a typo fails the run at once rather than every case.
    A bare name is looked up on PATH (the PATH of `env` when the agent gets one: where the process will look),
    then in base_dir; a path with a slash is relative to base_dir (the folder of the config that names the
    agent), never to the current folder."""
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise AgentError(f"command agent {cmd!r}: cannot split the command: {exc}") from exc
    if not argv:
        raise AgentError("command agent: empty command")
    base = Path(base_dir).absolute()
    if not base.is_dir():
        raise AgentError(f"command agent {cmd!r}: its folder {base} does not exist")
    prog = argv[0]
    if "/" in prog:
        path = Path(prog) if Path(prog).is_absolute() else base / prog
        where = (
            f"{path} does not exist" if Path(prog).is_absolute() else f"no file {path} (relative to {base})"
        )
    else:
        search = None if env is None else os.pathsep.join(os.get_exec_path(dict(env)))
        if shutil.which(prog, path=search):
            return argv
        path = base / prog
        where = f"not found on PATH nor in {base}"
    if not path.is_file():
        raise AgentError(f"command agent {cmd!r}: cannot start {prog!r}: {where}")
    if not os.access(path, os.X_OK):
        raise AgentError(
            f"command agent {cmd!r}: {path} is not executable (resolved against {base}); "
            f"chmod +x it or name its interpreter, e.g. `python {prog}`"
        )
    return [str(path), *argv[1:]]


def start(
    argv: list[str], cwd: str, *, env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None
) -> subprocess.Popen[bytes]:
    """The agent in a session of its own, so a kill reaches the children it started; with exactly `env` as its
    environment when given (None: sqlcanary's own); as the sandbox's user when there is one."""
    pipes: dict[str, Any] = {
        "cwd": cwd,
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "bufsize": 0,
    }
    if sandbox is not None:
        return sandbox.popen(argv, env=env, **pipes)
    return subprocess.Popen(argv, **pipes, start_new_session=True, env=None if env is None else dict(env))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def exit_words(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def text_tail(data: bytes | bytearray) -> str:
    """stderr is for people: undecodable bytes become U+FFFD there (never in SQL)."""
    return bytes(data[-STDERR_KEEP:]).decode("utf-8", errors="replace")


# --- one process per case ---------------------------------------------------------------------------------------

Ending = Literal["exited", "timeout", "too_big", "lingered"]


@dataclass(frozen=True)
class Exchange:
    """How one request/answer round with a per-case process ended. `lingered`: stdout closed but the process did
    not exit within GRACE_S (it was killed); `returncode` is None whenever sqlcanary killed the process."""

    ending: Ending
    stdout: bytes
    stderr: bytes
    returncode: int | None


def exchange(
    proc: subprocess.Popen[bytes], payload: bytes, *, timeout_s: float, cap: int = STDOUT_CAP
) -> Exchange:
    """Write the request, read stdout (at most `cap` bytes) and the tail of stderr until stdout closes and the
    process exits, the output passes the cap, or the deadline. One thread, no blocking call without a limit."""
    assert proc.stdin and proc.stdout and proc.stderr
    deadline = time.monotonic() + timeout_s
    out, err = bytearray(), bytearray()
    pending = memoryview(payload)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdin, selectors.EVENT_WRITE)
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    ending: Ending | None = None
    out_open, settle_by = True, None
    try:
        while ending is None:
            now, code = time.monotonic(), proc.poll()
            if code is not None and not out_open:
                ending = "exited"
                break
            if settle_by is None and (code is not None or not out_open):
                settle_by = now + GRACE_S  # one end is done: the other gets a moment, not the whole timeout
            if settle_by is not None and now >= settle_by:
                ending = "exited" if code is not None else "lingered"
                break
            if now >= deadline:
                ending = "timeout"
                break
            wait = min(deadline, settle_by or deadline) - now
            if not sel.get_map():  # every pipe is closed: only the exit is left to see
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=wait)
                continue
            for key, _ in sel.select(min(wait, POLL_S)):
                if key.fileobj is proc.stdin:
                    pending = _write_some(proc, sel, pending)
                    continue
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    sel.unregister(key.fileobj)
                    out_open = out_open and key.fileobj is not proc.stdout
                elif key.fileobj is proc.stdout:
                    out += chunk
                    if len(out) > cap:
                        ending = "too_big"
                        break
                else:
                    err += chunk
                    del err[:-STDERR_KEEP]
        _drain(proc.stderr, sel, err)
    finally:
        sel.close()
    if ending != "exited":
        kill_group(proc)
    elif out_open:
        kill_group(proc)  # the process is gone but something it started holds stdout: nothing more will come
    code = proc.wait() if ending == "exited" else None
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    return Exchange(ending=ending, stdout=bytes(out), stderr=bytes(err), returncode=code)


def _write_some(
    proc: subprocess.Popen[bytes], sel: selectors.BaseSelector, pending: memoryview
) -> memoryview:
    assert proc.stdin
    try:
        pending = pending[os.write(proc.stdin.fileno(), pending[: select.PIPE_BUF]) :]
    except BrokenPipeError:  # it stopped reading its input: what it printed still decides
        pending = pending[:0]
    if not pending:
        sel.unregister(proc.stdin)
        proc.stdin.close()
    return pending


def _drain(stream, sel: selectors.BaseSelector, err: bytearray) -> None:
    """What stderr still holds, without waiting for it to close (a child may keep it open)."""
    if stream not in {key.fileobj for key in sel.get_map().values()}:
        return
    with selectors.DefaultSelector() as only:
        only.register(stream, selectors.EVENT_READ)
        for _ in range(16):
            if not only.select(0):
                return
            chunk = os.read(stream.fileno(), _CHUNK)
            if not chunk:
                return
            err += chunk
            del err[:-STDERR_KEEP]


# --- one long-lived process, JSON lines --------------------------------------------------------------------------


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
                chunk = stream.read(_CHUNK)
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
                    while stream.read(_CHUNK):
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
                chunk = os.read(self.proc.stderr.fileno(), _CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self._err_eof = True
                self.proc.stderr.close()
                return
            self._err += chunk
            del self._err[:-STDERR_KEEP]
