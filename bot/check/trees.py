"""A side of a check, as a tree: the working tree or a temporary `git worktree` of a commit, the config found
in it, and for the head the config the check decides (the base's, but for its agent; bot.config.trusted). How a
tree is evaluated is bot.check.child's; what changed between the two, bot.check.diff's."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from bot.base.errors import ConfigError
from bot.config.model import CONFIG_NAMES, Config, load_config
from bot.config.trusted import head_config, head_config_alone
from bot.run.request import RunRequest


@dataclass(frozen=True)
class Tree:
    """One side of the comparison: a checked-out tree and the paths of the run inside it."""

    label: str  # "base" or "head"
    root: Path
    sha: str | None
    cwd: Path
    config: Config
    config_file: Path | None
    working: bool = False  # the user's own checkout, not a temporary worktree
    notes: tuple[
        str, ...
    ] = ()  # head settings the base's config overruled (bot.config.trusted), for the report

    def describe(self) -> str:
        sha = self.sha[:12] if self.sha else "no commit"
        return f"working tree at {sha}" if self.label == "head" and self.working else sha


def inside(path: Path, repo: Path, root: Path) -> Path:
    """`path` (as seen from the user's checkout) in the tree at `root`; paths outside the repository stay."""
    try:
        return root / path.resolve().relative_to(repo)
    except ValueError:
        return path.resolve()


def _config_file(req: RunRequest, repo: Path, root: Path, cwd: Path) -> Path | None:
    if req.config:
        found = inside(Path(req.config), repo, root)
        if not found.is_file():
            raise ConfigError("no such config file in this tree", path=str(found))
        return found
    suite = inside(Path(req.suite), repo, root) if req.suite else None
    folders = [suite, cwd] if suite and suite.is_dir() else [cwd]
    return next((f / n for f in folders for n in CONFIG_NAMES if (f / n).is_file()), None)


def open_tree(
    req: RunRequest, *, label: str, repo: Path, root: Path, sha: str | None, working: bool = False
) -> Tree:
    cwd = inside(req.folder, repo, root)
    if not cwd.is_dir():
        raise ConfigError(f"the current folder does not exist in the {label} commit", path=str(cwd))
    config_file = _config_file(req, repo, root, cwd)
    config = load_config(config_file) if config_file else Config(base_dir=str(cwd))
    return Tree(
        label=label, root=root, sha=sha, cwd=cwd, config=config, config_file=config_file, working=working
    )


def _from_cwd(path: Path, tree: Tree) -> str:
    """A path as the run in `tree` should see it: relative to its folder when inside the tree."""
    return os.path.relpath(path, tree.cwd) if path.is_relative_to(tree.root) else str(path)


def tree_request(req: RunRequest, tree: Tree, repo: Path, *, relative: bool) -> RunRequest:
    """The user's request with the suite and config moved into `tree` (relative to its folder, or absolute)."""
    suite = inside(Path(req.suite), repo, tree.root) if req.suite else None
    if suite is None and tree.config.suite:
        suite = tree.config.path(tree.config.suite).resolve()
    where = (_from_cwd(suite, tree) if relative else str(suite)) if suite else None
    config = (
        (_from_cwd(tree.config_file, tree) if relative else str(tree.config_file))
        if tree.config_file
        else None
    )
    return replace(req, suite=where, config=config)


def base_tree(req: RunRequest, *, repo: Path, root: Path, sha: str) -> Tree | None:
    """The base commit's side, or None when it has no sqlcanary config at all (the pull request that adds it):
    no config file where the head's rules look for one, and no suite at the path the request names."""
    if req.config and not inside(Path(req.config), repo, root).is_file():
        return None
    tree = open_tree(req, label="base", repo=repo, root=root, sha=sha)
    if tree.config_file is not None:
        return tree
    suite = inside(Path(req.suite), repo, root) if req.suite else None
    return tree if suite is not None and suite.exists() else None


def decide_head(req: RunRequest, head: Tree, base: Tree | None, *, trust_alone: bool = True) -> Tree:
    """The head as a check evaluates it: the base's config decides everything but the agent (bot.config.trusted).
    A suite the head moved (the base's suite path is gone from the head) is evaluated where the head put it and
    compared with the base's suite case by case. Without a base config, the head's own config is used; unless
    `trust_alone`, without the settings that route data and secrets."""
    folder = head.config_file.parent if head.config_file else head.cwd
    if base is None:
        config, notes = (head.config, ()) if trust_alone else head_config_alone(head.config)
        return replace(head, config=config, notes=notes)
    if base.config_file is not None:
        folder = inside(base.config_file, base.root, head.root).parent
    config, notes = head_config(head.config, base.config, base_dir=str(folder.resolve()))
    moved = _moved_suite(req, head, config)
    if moved is not None:
        config = config.model_copy(update={"suite": moved})
        notes = tuple(n for n in notes if not n.startswith("the head's `suite:"))
        notes += (
            f"the suite moved from `{base.config.suite}` to `{moved}`: the head's cases there are compared "
            "case by case with the base's suite",
        )
    return replace(head, config=config, notes=notes)


def _moved_suite(req: RunRequest, head: Tree, config: Config) -> str | None:
    """The head's own suite path when the base's is gone from the head's tree and the head's exists."""
    if req.suite or not config.suite or config.path(config.suite).exists():
        return None
    own = head.config.suite
    if own and head.config.path(own).exists():
        return str(head.config.path(own).resolve())
    return None


def suite_roots(run: RunRequest, tree: Tree) -> tuple[str, ...]:
    """The folders, relative to the repository root, that an answer's `used` paths may be relative to: the
    suite's folder, then the config file's. `run` is the request moved into the tree (absolute paths)."""
    roots: list[str] = []
    suite = run.suite
    candidates = [Path(suite) if suite else None, tree.config_file]
    for path in candidates:
        if path is None:
            continue
        folder = path if path.is_dir() else path.parent
        try:
            rel = folder.resolve().relative_to(tree.root.resolve()).as_posix()
        except ValueError:
            continue
        rel = "" if rel == "." else rel
        if rel not in roots:
            roots.append(rel)
    return tuple(roots)
