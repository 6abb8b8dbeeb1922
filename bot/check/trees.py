"""A side of a check, as a tree: the working tree or a temporary `git worktree` of a commit, the config found
in it, and for the head the config the check decides (the base's, but for its agent; bot.config.trusted). How a
tree is evaluated is bot.check.child's; what changed between the two, bot.check.diff's."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bot.base.errors import ConfigError, SqlcanaryError
from bot.check.head_reader import HeadFiles, ReadRequest
from bot.config.model import CONFIG_NAMES, Config, load_config
from bot.config.trusted import decide_head_config
from bot.run.request import RunRequest

# Reads the head's files apart (bot.check.head_reader.read_head), given what to read and the head's folder.
ReadHead = Callable[[ReadRequest, Path], HeadFiles]


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
    files: HeadFiles | None = None  # the head's: its files as read apart (bot.check.head_reader)

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


def _cwd(req: RunRequest, label: str, repo: Path, root: Path) -> Path:
    cwd = inside(req.folder, repo, root)
    if not cwd.is_dir():
        raise ConfigError(f"the current folder does not exist in the {label} commit", path=str(cwd))
    return cwd


def open_tree(
    req: RunRequest, *, label: str, repo: Path, root: Path, sha: str | None, working: bool = False
) -> Tree:
    cwd = _cwd(req, label, repo, root)
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


@dataclass(frozen=True)
class Roots:
    """Where a check's two trees are: the repository, and each side's root and sha (the head may be the working
    tree as it is)."""

    repo: Path
    base_root: Path
    base_sha: str
    head_root: Path
    head_sha: str | None
    working: bool


def open_trees(req: RunRequest, out: Roots, *, trust_alone: bool, read: ReadHead) -> tuple[Tree, Tree | None]:
    """The head's tree with the config a check evaluates it with (the base's, but for its agent:
    bot.config.trusted), and the base's tree, None when the base commit has no sqlcanary config at all (the pull
    request that adds it). What is wrong in the base commit is a ConfigError naming it. Both trees' places are
    found first; the base's config is read here, the head's files apart (`read`: this process holds the
    secrets and parses nothing of the head's), and the head's config is decided here, in one step."""
    head_cwd = _cwd(req, "head", out.repo, out.head_root)
    head_file = _config_file(req, out.repo, out.head_root, head_cwd)
    base_where = f"base {out.base_sha[:12]}"
    try:
        base_place = _base_place(req, out)
    except SqlcanaryError as exc:
        raise ConfigError(f"{base_where}: {exc}") from exc
    base_cwd, base_file = base_place or (None, None)
    try:
        base = load_config(base_file) if base_file else None
    except SqlcanaryError as exc:
        raise ConfigError(f"{base_where}: {exc}") from exc
    if base is None and base_cwd is not None:
        base = Config(base_dir=str(base_cwd))
    # The decided config's paths are relative to the base's config's folder, in the head's tree.
    folder = inside(base_file, out.base_root, out.head_root).parent if base_file else None
    folder = (folder or (head_file.parent if head_file else head_cwd)).resolve()
    asked = ReadRequest(
        config_file=_str(head_file), suites=_suites(req, out, base, folder), checkout=str(out.head_root)
    )
    files = read(asked, head_cwd)
    own = files.own_config(head_file) if head_file else Config(base_dir=str(head_cwd))
    config, notes = decide_head_config(
        own,
        base,
        base_dir=str(folder),
        suite_given=bool(req.suite),
        trust_alone=trust_alone,
    )
    head = Tree(
        label="head",
        root=out.head_root,
        sha=out.head_sha,
        cwd=head_cwd,
        config=config,
        config_file=head_file,
        working=out.working,
        notes=notes,
        files=files,
    )
    if base is None or base_cwd is None:
        return head, None
    return head, Tree(
        label="base", root=out.base_root, sha=out.base_sha, cwd=base_cwd, config=base, config_file=base_file
    )


def _str(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def _suites(req: RunRequest, out: Roots, base: Config | None, folder: Path) -> tuple[str, ...]:
    """The suites the head may be evaluated with, as far as the base decides: the request's, moved into the
    head's tree, and the base config's, rebased to `folder` in it (the reader adds the head's own)."""
    given = [inside(Path(req.suite), out.repo, out.head_root)] if req.suite else []
    based = (
        [Path(base.suite) if Path(base.suite).is_absolute() else folder / base.suite]
        if base and base.suite
        else []
    )
    return tuple(str(p) for p in (*given, *based))


def _base_place(req: RunRequest, out: Roots) -> tuple[Path, Path | None] | None:
    """The base tree's folder and config file, or None when it has no sqlcanary config at all: no config file
    where the head's rules look for one, and no suite at the path the request names."""
    repo, root = out.repo, out.base_root
    if req.config and not inside(Path(req.config), repo, root).is_file():
        return None
    cwd = _cwd(req, "base", repo, root)
    config_file = _config_file(req, repo, root, cwd)
    if config_file is not None:
        return cwd, config_file
    suite = inside(Path(req.suite), repo, root) if req.suite else None
    return (cwd, None) if suite is not None and suite.exists() else None


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
