"""The sandbox a pull request's agent runs in when sqlcanary runs as root (always, in the Action's container).

Every process of the agent runs as a fresh unprivileged user id of its own (no /etc/passwd entry, no process
with that id running: bot.agents.user_ids; a group of the same number and no other group), in a session of its
own, with umask 077, `no_new_privs` (through `setpriv`, so no setuid program gives root back) and a private
home folder. As another user it cannot read the environment or the memory of sqlcanary's processes
(/proc/<pid>/environ and /proc/<pid>/fd/* need the same user id, and the evaluator is non-dumpable besides),
cannot write root's files, and cannot signal anything but its own processes. `close()` kills every process of
that id (a `setsid` or double-forked child included) with a `kill(-1)` run as that id, then removes what the id
left in the folders every user may write and its System V IPC objects (bot.agents.leftovers), and the home
folder.

The switch of user id uses Python's C-level subprocess support (`user=`, `group=`, `extra_groups=`, `umask=`),
never `preexec_fn`: agents are started from worker threads. Not root (a laptop, a non-root CI job): no sandbox,
and the run says so once (`meta.sandbox`)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import bot
from bot.agents import reach
from bot.agents.leftovers import remove_leftovers
from bot.agents.user_ids import claim_free_id, processes_by_user
from bot.base.errors import AgentError

NOT_ROOT = "off: not running as root"
OFF_ASKED = "off: --sandbox off"
# `on`: sandboxed or an error (a check's sides, the Action); `auto`: sandboxed when the sandbox's user can reach
# the agent, else run as the user's own program, said and recorded (a local `run`); `off`: never sandboxed.
Policy = Literal["auto", "on", "off"]
T = TypeVar("T")
_KILL = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\n"
_NO_NEW_PRIVS_EXEC = (
    "import ctypes, os, sys\n"
    "if ctypes.CDLL(None).prctl(38, 1, 0, 0, 0) != 0:\n"
    "    sys.exit('sqlcanary: cannot set no_new_privs for the agent')\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)
_KILL_ROUNDS = 200  # a fork bomb needs a few rounds; a normal agent is gone after the first
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0)) == 0


def make_undumpable() -> bool:
    """This process can no longer be read through /proc (environ, mem, fd) by anyone but root, even by a process
    of its own user id; no core dump either. For the evaluator and the action. False where unsupported."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def forbid_new_privileges() -> bool:
    """No setuid program or file capability gives this process (or its children) more than it has."""
    return _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def _safe_root() -> Path:
    """Where homes and locks live: /run/sqlcanary when /run is root's own, else a folder in the temp dir. It
    must be root's and writable by root alone, or an earlier agent could have made it its own."""
    run = Path("/run")
    parent = run if run.is_dir() and _root_only(run.lstat()) else Path(tempfile.gettempdir())
    root = parent / ("sqlcanary" if parent == run else "sqlcanary-sandbox")
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o711)
    st = root.lstat()
    if not stat.S_ISDIR(st.st_mode) or not _root_only(st):
        raise AgentError(
            f"the sandbox folder {root} is not a folder that root alone can write (owner uid {st.st_uid}, "
            f"mode {stat.S_IMODE(st.st_mode):o}): remove it and run again"
        )
    root.chmod(0o711)  # others may reach their own home in it, not list it
    return root


def _root_only(st: os.stat_result) -> bool:
    return st.st_uid == 0 and not stat.S_ISLNK(st.st_mode) and not st.st_mode & 0o022


class Sandbox:
    """One evaluation's user id. Hold it from before the agent starts until after the run; `close()` always."""

    def __init__(self, uid: int, root: Path, lock_fd: int) -> None:
        self.uid = self.gid = uid
        self.home = root / str(uid)
        self._lock_fd = lock_fd
        self._setpriv = shutil.which("setpriv")
        self.closed = False
        if self.home.exists() or self.home.is_symlink():
            _remove(self.home)  # a crashed evaluation's: no process of the id is left (checked, and locked)
        self.home.mkdir(mode=0o700)
        (self.home / "tmp").mkdir(mode=0o700)
        for folder in (self.home, self.home / "tmp"):
            os.chown(folder, uid, uid, follow_symlinks=False)

    def describe(self) -> str:
        return f"uid {self.uid}"

    def popen_kwargs(self) -> dict[str, Any]:
        """What subprocess.Popen needs to start a process inside the sandbox."""
        return {
            "user": self.uid,
            "group": self.gid,
            "extra_groups": [],
            "umask": 0o077,
            "start_new_session": True,
        }

    def argv(self, argv: list[str]) -> list[str]:
        """`argv` with `no_new_privs` set before it starts, so no setuid program can escalate: through
        `setpriv --no-new-privs` where it exists, else a tiny Python shim that sets it and execs `argv`."""
        if self._setpriv:
            return [self._setpriv, "--no-new-privs", "--", *argv]
        return [sys.executable, "-S", "-I", "-c", _NO_NEW_PRIVS_EXEC, *argv]

    def environment(self, env: Mapping[str, str] | None) -> dict[str, str]:
        """The agent's environment (already allow-listed; None: only PATH) with the sandbox's home and temp."""
        out = dict(env) if env is not None else {"PATH": os.defpath}
        tmp = str(self.home / "tmp")
        out.update(
            HOME=str(self.home),
            TMPDIR=tmp,
            TMP=tmp,
            TEMP=tmp,
            USER="sqlcanary-agent",
            LOGNAME="sqlcanary-agent",
        )
        return out

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        env = kwargs.pop("env", None)
        return subprocess.Popen(self.argv(argv), env=self.environment(env), **kwargs, **self.popen_kwargs())

    def check_reachable(self, path: Path, *, what: str, read: bool = True, execute: bool = False) -> None:
        """AgentError (exit 2) when this sandbox's user cannot reach `path` (bot.agents.reach)."""
        reach.check_reachable(path, who=self.describe(), what=what, read=read, execute=execute)

    def reaches_sqlcanary(self) -> bool:
        """Whether this sandbox's user can start this Python and import this sqlcanary (a child of sqlcanary's
        own run as it: the head's reader, the fixture loader). Not in a dev container's 0700 /root."""
        try:
            self.check_reachable(Path(sys.executable), what="this Python", execute=True)
            self.check_reachable(Path(bot.__file__).parent, what="sqlcanary")
        except reach.Unreachable:
            return False
        return True

    def check_command(self, argv: list[str], base_dir: str, env: Mapping[str, str] | None) -> None:
        """The agent's folder, its program and the files its arguments name must be reachable by the user."""
        reach.check_command(argv, base_dir, env, who=self.describe())

    def close(self) -> None:
        """Kill every process of the user id (however it detached), then remove the home folder. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            self.kill_all()
            remove_leftovers(self.uid)  # its files in /tmp, /dev/shm..., its SysV IPC (bot.agents.leftovers)
            _remove(self.home)
        finally:
            with contextlib.suppress(OSError):
                (
                    self.home.parent / f"{self.uid}.lock"
                ).unlink()  # still locked: nobody can take the id meanwhile
            os.close(self._lock_fd)

    def kill_all(self) -> bool:
        """SIGKILL every process of the id, from a process of that id (`kill(-1)` reaches exactly those, and a
        fork cannot slip past it); repeated until /proc lists none. False if some survived every round."""
        for round_ in range(_KILL_ROUNDS):
            left = processes_by_user().get(self.uid, [])
            if not left:
                return True
            try:
                subprocess.run(
                    [sys.executable, "-S", "-I", "-c", _KILL],
                    env={},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=30,
                    cwd="/",
                    **self.popen_kwargs(),
                )
            except (OSError, subprocess.SubprocessError):
                for pid in left:  # the killer could not start: one by one, as root
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
            time.sleep(min(0.002 * round_, 0.05))
        print(f"sqlcanary: warning: processes of the agent's user {self.uid} survived", file=sys.stderr)
        return False

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove(path: Path) -> None:
    """rmtree without following links (safe on a tree the agent's user wrote)."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def sandbox_wanted() -> bool:
    return sys.platform.startswith("linux") and os.geteuid() == 0


def open_sandbox(*, root: Path | None = None) -> Sandbox | None:
    """A fresh sandbox when running as root on Linux, else None. Raises AgentError when none can be made."""
    if not sandbox_wanted():
        return None
    root = root or _safe_root()
    uid, fd = claim_free_id(root)
    try:
        return Sandbox(uid, root, fd)
    except BaseException:
        os.close(fd)
        raise


def isolation_note(sandbox: Sandbox | None) -> str:
    """What `meta.sandbox` records: `uid 61234`, or why there is no sandbox."""
    return sandbox.describe() if sandbox is not None else NOT_ROOT


RUNS_PR_CODE = ("command", "python")  # agent kinds that start the PR's own code


def runs_pr_code(spec: str) -> bool:
    return spec.partition(":")[0].strip() in RUNS_PR_CODE


@contextlib.contextmanager
def agent_sandbox(spec: str) -> Iterator[tuple[Sandbox | None, str | None]]:
    """For one evaluation with the agent `spec`: (the sandbox or None, what `meta.sandbox` records). An agent
    that runs no code of the PR's (gold, predictions, the built-in llm) needs none and records nothing. With a
    sandbox this process becomes non-dumpable; the sandbox is closed (its processes killed) however the
    evaluation ends."""
    if not runs_pr_code(spec):
        yield None, None
        return
    sandbox = open_sandbox()
    if sandbox is None:
        yield None, NOT_ROOT
        return
    try:
        make_undumpable()
        yield sandbox, sandbox.describe()
    finally:
        sandbox.close()


@contextlib.contextmanager
def sandboxed_start(
    spec: str, start: Callable[[Sandbox | None], T], *, policy: Policy, warn: Callable[[str], None]
) -> Iterator[tuple[T, str | None]]:
    """`start(sandbox)` inside `agent_sandbox(spec)` under `policy`: (what it made, what `meta.sandbox`
    records). Under `auto`, an agent whose files or interpreter the sandbox's user cannot reach (a checkout or a
    virtual environment in a folder only root may enter, as in a dev container's /root) runs as sqlcanary's own
    user instead, as any program the user starts would: `warn` says so with the fix, and the run records why.
    Under `on` that is an error (exit 2) naming the fix; under `off` no sandbox is made."""
    if policy == "off" and runs_pr_code(spec):
        yield start(None), OFF_ASKED
        return
    with agent_sandbox(spec) as (sandbox, isolation):
        try:
            made = start(sandbox)
        except reach.Unreachable as exc:
            if policy != "auto":
                raise AgentError(
                    f"{exc}; outside the Action, `--sandbox off` runs your own agent unsandboxed"
                ) from None
            unreachable = exc
        else:
            yield made, isolation
            return
    warn(
        f"sqlcanary: warning: {unreachable}. The agent runs as root, unsandboxed, as any program you start "
        "would (--sandbox on makes this an error)"
    )
    yield start(None), f"off: {unreachable.blocker} cannot be reached by the sandbox's user"
