"""A command agent's process: its program found (one that cannot start is refused before the first case), started
in a session of its own, killed with whatever it started; the limits on what it may write. The agent is someone
else's program: its output is read as bytes (capped, decoded strictly by the caller), a closed stdout or a dead
process noticed at once instead of at the timeout, by bot.agents.exchange (a process per case) and
bot.agents.line_process (a long-lived one)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.agents.sandbox import Sandbox
from bot.base.childenv import allow_listed
from bot.base.errors import AgentError

STDOUT_CAP = 1 << 20  # bytes of stdout one case may produce; past it the agent is killed
STDERR_KEEP = 4000  # bytes of stderr kept (the tail)
GRACE_S = 1.0  # once stdout closes or the process exits, how long the other may take to follow
POLL_S = 0.25  # how often a wait looks at whether the process is still alive
CHUNK = 65536  # bytes read from a pipe at a time


def size_words(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} bytes"


def resolve_argv(cmd: str, base_dir: str, *, env: Mapping[str, str] | None = None) -> list[str]:
    """Split CMD and make sure its program can start, so a typo fails the run at once rather than every case.
    A bare name is looked up on PATH (the PATH of `env`, os.defpath without one: where the process will look),
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
        search = os.pathsep.join(os.get_exec_path(allow_listed(None) if env is None else dict(env)))
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
    environment (None: PATH=os.defpath only, never sqlcanary's own); as the sandbox's user when there is one."""
    pipes: dict[str, Any] = {
        "cwd": cwd,
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "bufsize": 0,
    }
    if sandbox is not None:
        return sandbox.popen(argv, env=env, **pipes)
    child_env = allow_listed(None) if env is None else dict(env)
    return subprocess.Popen(argv, **pipes, start_new_session=True, env=child_env)


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
