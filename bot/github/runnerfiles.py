"""The runner's own files, out of the pull request's reach.

The runner hands each step files it reads back when the step ends: GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH,
GITHUB_STATE and GITHUB_STEP_SUMMARY (a line in GITHUB_ENV such as `NODE_OPTIONS=--require ...` reaches every
later step). Some runners create them writable by everyone (act makes them 0666), and the pull request's agent,
though it runs as a user of its own (bot.agents.sandbox), could then append to them, or replace one in a folder
everyone may write. `lock_runner_files` takes the write bits for group and others off each such file and off its
folder (a sticky folder such as /tmp already keeps others from replacing a file), and off the step's HOME, where
a planted `.gitconfig` would reach later container steps. The runner owns these files and keeps its access.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

RUNNER_FILES = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def _lock(path: Path, *, folder: bool) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    if not mode & _OTHERS_WRITE or (folder and mode & stat.S_ISVTX):
        return False
    try:
        os.chmod(path, stat.S_IMODE(mode) & ~_OTHERS_WRITE)
    except OSError:
        return False
    return True


def lock_runner_files(environ: Mapping[str, str]) -> list[str]:
    """Make the runner's command files, their folders and HOME writable by their owner only (and root); the
    paths it changed. Run before any code of the pull request starts."""
    changed: list[str] = []
    files = [Path(environ[name]) for name in RUNNER_FILES if environ.get(name)]
    folders = {f.parent for f in files}
    if environ.get("HOME"):
        folders.add(Path(environ["HOME"]))
    for path in files:
        if path.is_file() and _lock(path, folder=False):
            changed.append(str(path))
    for folder in sorted(folders):
        if folder.is_dir() and _lock(folder, folder=True):
            changed.append(str(folder))
    return changed
