"""A child process of this very sqlcanary: how it starts (the installed package first on its path, never a
`bot/` or a library of the tree it runs in) and how it is stopped. Each side of a check, attribution's child and a
local sweep's legs start this way."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import bot

# `MODULE.main(argv)` in a child, importing this sqlcanary. Python's `-P`: the child starts in the tree it evaluates,
# and without it that folder would come first on sys.path, so a `yaml.py` or `pydantic.py` of a pull request would
# be imported by a process holding the database's admin DSN. A `python:` agent's module is imported from its own
# folder, added by bot.agents.pyhost for that import alone.
_BOOT = "import sys; sys.path.insert(0, {root!r}); from {module} import main; sys.exit(main(sys.argv[1:]))"


def self_argv(module: str, *args: str) -> list[str]:
    """The command line that runs `module.main(args)` (`bot.cli` for `sqlcanary ARGS`) in a child."""
    code = _BOOT.format(root=str(Path(bot.__file__).resolve().parents[1]), module=module)
    return [sys.executable, "-P", "-c", code, *args]


def wait_child(proc: subprocess.Popen) -> int:
    """The child's exit code; when this process is stopped while waiting, the child is stopped too."""
    try:
        return proc.wait()
    except BaseException:
        stop_child(proc)
        raise


def stop_child(proc: subprocess.Popen) -> None:
    """Let the child drop its databases: a Ctrl-C in the terminal reached it too, so give it a moment; then
    SIGINT (we were stopped some other way); kill it only if it still does not stop."""
    for signum, grace in ((None, 3), (signal.SIGINT, 15)):
        if signum is not None:
            proc.send_signal(signum)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.kill()
    proc.wait()


def exchange(proc: subprocess.Popen, data: bytes, *, limit: int, timeout_s: float) -> tuple[bytes, int, bool]:
    """Give a child started with stdin and stdout pipes `data` on its stdin, read at most `limit` + 1 bytes of
    its stdout and wait for it: (what it printed, its exit code, whether `timeout_s` ran out and it was killed).
    A child that prints more than `limit` is killed; when this process is stopped, the child is stopped too."""
    assert proc.stdin is not None and proc.stdout is not None
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        proc.kill()

    timer = threading.Timer(timeout_s, expire)
    timer.start()
    try:
        proc.stdin.write(data)
        proc.stdin.close()
        out = proc.stdout.read(limit + 1)
        if len(out) > limit:
            proc.kill()
        rc = proc.wait()
    except BaseException:
        stop_child(proc)
        raise
    finally:
        timer.cancel()
    return out, rc, expired.is_set()
