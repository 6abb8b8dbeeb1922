"""What keeps git from running a program the checked-out tree provides, when sqlcanary runs git on it.

The tree is the pull request's. git runs programs named by configuration (hooks, fsmonitor, filter, diff and merge
drivers), and `.gitattributes` in the tree chooses which driver applies to which file. So every git sqlcanary
starts (bot.base.git.Git) gets, on its command line, where nothing in a file can override them:

- no hook (`core.hooksPath=/dev/null`: a relative hooks path, as husky sets, would name the tree's own folder),
  no fsmonitor, no submodule recursion;
- every filter, diff and merge driver the configuration defines emptied (`filter.<name>.smudge=` ...,
  `filter.<name>.required=false`), so an attribute of the tree selects nothing that runs; and `diff`, `log` and
  `show` with `--no-ext-diff --no-textconv`;
- and git is refused (ConfigError, exit 2) when its configuration is read from a file inside the working tree
  (an `include.path` of `.git/config` pointing into the checkout): the pull request would then write git's
  configuration itself (hooks, drivers, the remote the token is sent to).

Files tracked with Git LFS are therefore checked out as their pointers in sqlcanary's worktrees."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from bot.base.errors import ConfigError

NO_TREE_PROGRAMS = ("core.hooksPath=/dev/null", "core.fsmonitor=false", "submodule.recurse=false")
_DRIVER = re.compile(
    r"^(?P<kind>filter|diff|merge)\.(?P<name>.+)\.(smudge|clean|process|textconv|command|driver)$"
)
_DIFF_VERBS = frozenset({"diff", "log", "show"})

Probe = Callable[[list[str]], subprocess.CompletedProcess[str]]


def diff_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """`args` with `--no-ext-diff --no-textconv` after a `diff`, `log` or `show` verb."""
    if args and args[0] in _DIFF_VERBS:
        return (args[0], "--no-ext-diff", "--no-textconv", *args[1:])
    return args


def _entries(listed: str) -> list[tuple[str, str]]:
    """(origin, key) of each entry of `git config --list --show-origin -z`."""
    items = listed.split("\0")
    return [(items[i], items[i + 1].split("\n", 1)[0]) for i in range(0, len(items) - 1, 2)]


def _tree_file(origin: str, tree: Path | None, cwd: Path) -> Path | None:
    """The config file `origin` names when it lies inside the working tree `tree` (outside its `.git`)."""
    if tree is None or not origin.startswith("file:"):
        return None
    path = Path(origin.removeprefix("file:"))
    for base in (tree, cwd):  # git names a relative file from where it runs (the top level, or `cwd`)
        found = (path if path.is_absolute() else base / path).resolve()
        if found.is_file():
            break
    try:
        inner = found.relative_to(tree)
    except ValueError:
        return None
    return None if inner.parts[:1] == (".git",) else found


def hardening(probe: Probe, cwd: Path) -> tuple[str, ...]:
    """The `-c` settings for a git in `cwd` (see the module's text); ConfigError when its configuration is read
    from a file of the working tree. `probe` runs git in `cwd` with the same environment, unhardened."""
    listed = probe(["config", "--list", "--show-origin", "-z"])
    if listed.returncode != 0:
        return NO_TREE_PROGRAMS
    entries = _entries(listed.stdout)
    top = probe(["rev-parse", "--show-toplevel"])
    tree = Path(top.stdout.strip()).resolve() if top.returncode == 0 and top.stdout.strip() else None
    for origin, key in entries:
        planted = _tree_file(origin, tree, cwd)
        if planted is not None:
            raise ConfigError(
                f"git reads its configuration ({key}) from {planted}, a file inside the checked-out tree "
                "(an include.path in .git/config): the pull request could set git's hooks, filters or remote "
                "there, so sqlcanary does not run git on it; remove the include"
            )
    emptied: dict[str, None] = {}
    for _, key in entries:
        found = _DRIVER.match(key)
        if found:
            emptied[f"{key}="] = None
            if found["kind"] == "filter":
                emptied[f"filter.{found['name']}.required=false"] = None
    return (*NO_TREE_PROGRAMS, *emptied)
