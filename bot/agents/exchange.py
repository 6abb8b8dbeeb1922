"""One request/answer round with a per-case agent process: the request written, stdout read (capped) and the
tail of stderr kept until stdout closes and the process exits, the output passes the cap, or the deadline."""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import subprocess
import time
from dataclasses import dataclass
from typing import Literal

from bot.agents.pipes import CHUNK, GRACE_S, POLL_S, STDERR_KEEP, STDOUT_CAP, kill_group

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
                chunk = os.read(key.fd, CHUNK)
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
            chunk = os.read(stream.fileno(), CHUNK)
            if not chunk:
                return
            err += chunk
            del err[:-STDERR_KEEP]
