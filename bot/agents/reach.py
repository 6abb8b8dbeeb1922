"""Whether the sandbox's user (bot.agents.sandbox) can reach the agent's files, checked before it starts: a
fresh user id owns nothing and is in no group, so only the permission bits of "other" count, on every folder on
the way and on the file itself. A checkout only root can read fails the run at once (exit 2) with the fix,
rather than every case with a "permission denied" of the agent's."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from bot.base.errors import AgentError


class Unreachable(AgentError):
    """The sandbox's user cannot reach a file the agent needs (the message names it and the fix)."""

    def __init__(self, message: str, *, blocker: Path) -> None:
        super().__init__(message)
        self.blocker = blocker


def check_reachable(path: Path, *, who: str, what: str, read: bool = True, execute: bool = False) -> None:
    """Refuse (AgentError) when `who` cannot reach `path`: every folder above it must be searchable by others,
    a folder itself searchable (and readable when `read`), a file readable (and executable when `execute`)."""
    path = Path(path).absolute()
    real = path.resolve()
    for folder in _on_the_way(path):
        if not _other_may(folder, stat.S_IXOTH):
            _unreachable(who, what, path, folder, "o+x")
    if real.is_dir():
        if not _other_may(real, stat.S_IXOTH | (stat.S_IROTH if read else 0)):
            _unreachable(who, what, path, real, "o+rx" if read else "o+x")
        return
    needed = (stat.S_IROTH if read else 0) | (stat.S_IXOTH if execute else 0)
    if needed and real.exists() and not _other_may(real, needed):
        _unreachable(who, what, path, real, "o+r" + ("x" if execute else ""))


def check_command(argv: list[str], base_dir: str, env: Mapping[str, str] | None, *, who: str) -> None:
    """A `command:` agent's folder, its program (found as the process will find it) and the files its
    arguments name (relative to its folder, as it runs there)."""
    base = Path(base_dir).absolute()
    check_reachable(base, who=who, what="the agent's folder")
    search = None if env is None else os.pathsep.join(os.get_exec_path(dict(env)))
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=search)
    if program:
        check_reachable(base / program, who=who, what="the agent's program", execute=True)
    for arg in argv[1:]:
        if not arg.startswith("-") and (base / arg).is_file():
            check_reachable(base / arg, who=who, what="the agent's file")


def _on_the_way(path: Path) -> list[Path]:
    """Every folder the kernel searches to open `path`: the folders above it as written (a venv's `bin/python`
    is a link, but `/root/venv/bin` is searched before the link is followed) and, for each link on the way,
    the folders above where it leads; top-down, each once."""
    seen: dict[Path, None] = {}
    for step in (*reversed(path.parents), path):
        for folder in (*reversed(step.parents), *reversed(step.resolve().parents)):
            seen.setdefault(folder, None)
    return list(seen)


def _unreachable(who: str, what: str, path: Path, blocker: Path, bits: str) -> None:
    shown = f"{path} ({blocker})" if blocker != path else str(path)
    raise Unreachable(
        f"{what} {shown} cannot be reached by the agent's user: sqlcanary runs as root, so the agent runs as an "
        f"unprivileged user of its own ({who}) and needs every folder on the way to be searchable and its files "
        f"readable by others; fix with `chmod {bits} {blocker}` (or `chmod -R o+rX` on the checkout)",
        blocker=blocker,
    )


def _other_may(path: Path, bits: int) -> bool:
    try:
        return os.stat(path).st_mode & bits == bits
    except OSError:
        return False
