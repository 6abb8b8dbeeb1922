"""What changed between the base commit and the head, as `git diff --unified=0` hunks: what a check links its
regressions to (bot.compare.causes) and what attribution bisects (bot.attribution.hunks)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.base.errors import ConfigError
from bot.base.git import Git, git_environment
from bot.compare.diff import FileDiff, added_file, parse_diff

MAX_UNTRACKED = 200  # untracked files of a working-tree head counted as added (more: the rest are left out)
MAX_UNTRACKED_BYTES = 256 * 1024  # larger untracked files (results, data) are no KB a case cites
_DIFF_TIMEOUT_S = 120


def pr_diff(
    repo: Path, base_sha: str, head_sha: str | None, *, environ: Mapping[str, str] | None = None
) -> tuple[FileDiff, ...]:
    """What changed from the base commit to the head (a commit, or None: the working tree as it is, untracked
    files included), as `git diff --unified=0` hunks with paths relative to the repository root.

    The two evaluated trees are diffed directly, not `base...head` from their merge base: the runs' `used` line
    numbers are those of these two trees, and a shallow CI checkout may not hold the merge base at all. An
    error gives no diff (the reports then say the regressions are not explained), never a failed check. git
    gets the allow-listed part of `environ` (Settings.environ) only."""
    args = ["diff", "--unified=0", "--no-color", "--no-ext-diff", "--no-renames", base_sha]
    args += [*([head_sha] if head_sha else []), "--"]
    try:
        out = Git(repo, env=git_environment(environ), timeout=_DIFF_TIMEOUT_S).run(
            *args, config=("core.quotePath=false",), errors="replace"
        )
    except (OSError, ConfigError):
        return ()
    if out.returncode != 0:
        return ()
    files = list(parse_diff(out.stdout))
    if head_sha is None:
        files += _untracked(repo, environ)
    return tuple(files)


def _untracked(repo: Path, environ: Mapping[str, str] | None) -> list[FileDiff]:
    try:
        out = Git(repo, env=git_environment(environ), timeout=_DIFF_TIMEOUT_S).run(
            "ls-files", "-z", "--others", "--exclude-standard", errors="replace"
        )
    except (OSError, ConfigError):
        return []
    names = [n for n in out.stdout.split("\0") if n][:MAX_UNTRACKED]
    added = []
    for name in names:
        try:
            if (repo / name).stat().st_size > MAX_UNTRACKED_BYTES:
                continue
            text = (repo / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        added.append(added_file(name, text))
    return added
