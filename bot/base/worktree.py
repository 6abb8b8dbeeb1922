"""A commit checked out in a temporary worktree that is always removed (on error, Ctrl-C and SIGTERM too)."""

from __future__ import annotations

import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bot.base.errors import ConfigError
from bot.base.git import run_git


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while a worktree exists, so `finally` blocks still run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def worktree(
    repo: Path, sha: str, *, label: str = "base", environ: Mapping[str, str] | None = None
) -> Iterator[Path]:
    """`git worktree add --detach` of `sha` in a temporary folder; removed on the way out, whatever happens."""
    holder = Path(tempfile.mkdtemp(prefix=f"sqlcanary-{label}-"))
    # The agent may run as an unprivileged user of its own (bot.agents.sandbox): let it reach the tree.
    holder.chmod(0o755)
    path = holder / "tree"
    with _sigterm_as_interrupt():
        try:
            out = run_git(
                ["worktree", "add", "--detach", "--quiet", str(path), sha], cwd=repo, environ=environ
            )
            if out.returncode != 0:
                raise ConfigError(f"git worktree add failed for {sha[:12]}: {out.stderr.strip()[:500]}")
            yield path
        finally:
            remove_worktree(repo, path, environ=environ)
            shutil.rmtree(holder, ignore_errors=True)


def remove_worktree(repo: Path, path: Path, *, environ: Mapping[str, str] | None = None) -> None:
    """Best effort: `git worktree remove --force`, then delete what is left and prune git's record of it."""
    try:
        run_git(["worktree", "remove", "--force", str(path)], cwd=repo, timeout=60, environ=environ)
    except ConfigError:
        pass
    shutil.rmtree(path, ignore_errors=True)
    try:
        run_git(["worktree", "prune"], cwd=repo, timeout=60, environ=environ)
    except ConfigError:
        pass
