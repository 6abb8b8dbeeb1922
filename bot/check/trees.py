"""The two sides of a check: a checked-out tree each (the working tree, or a temporary `git worktree`), and the
`sqlcanary run` that evaluates it in a child process of its own.

The child gets an allow-listed environment and the config the check decided for its side (for the head: the
base's, but for its agent; bot.config.trusted). The pull request's own agent code runs below it as a sandbox user
when sqlcanary is root (bot.agents.sandbox), so it sees neither GITHUB_TOKEN, INPUT_*, the admin DSN nor an LLM key
unless the base's config names the variable for it (`agent.env`, or `llm.api_key_env` for the built-in agent).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import bot
from bot.agents.env import agent_environment
from bot.base.errors import EXIT_BUG, EXIT_INTERRUPTED, ConfigError
from bot.base.git import Git, git_environment
from bot.base.results import RunResult, read_run, write_run
from bot.base.settings import Settings
from bot.compare.diff import FileDiff, added_file, parse_diff
from bot.config.model import CONFIG_NAMES, Config, load_config
from bot.config.trusted import head_config, head_config_alone, write_resolved
from bot.db.provision import Server
from bot.report.redact import redact_model
from bot.run.request import RunRequest

# `sqlcanary run` in a child process, importing this very sqlcanary (not a `bot/` the checked-out tree holds).
_BOOT = "import sys; sys.path.insert(0, {root!r}); from bot.cli import main; sys.exit(main(sys.argv[1:]))"


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


def child_environment(settings: Settings, tree: Tree, server: Server) -> dict[str, str]:
    """What the tree's `sqlcanary run` (and so the tree's agent) may see: the allow-list, the variables the
    tree's config names, sqlcanary's own settings, and the database to use."""
    config = tree.config
    names = list(config.agent.env) if config.agent else []
    spec = config.agent.spec if config.agent else ""
    if spec.partition(":")[0].strip() == "llm":
        names.append(config.llm.api_key_env)  # the built-in agent asks the model with this key
    env = agent_environment(settings.environ, allow=tuple(names))
    env.update({k: v for k, v in settings.environ.items() if k.startswith("SQLCANARY_")})
    env["DATABASE_URL"] = server.admin_dsn
    return env


def evaluate_tree(
    req: RunRequest, tree: Tree, repo: Path, server: Server, out: Path, settings: Settings
) -> RunResult:
    """`sqlcanary run` in the tree, in a child process; its RunResult is written to `out`."""
    code = _BOOT.format(root=str(Path(bot.__file__).resolve().parents[1]))
    out.unlink(missing_ok=True)  # never mistake an earlier check's file for this run's
    # The child loads exactly the config decided here (the head's is the base's but for its agent), from a file
    # only this user can read: no file of the tree decides it, and a DSN in it never sits where the agent reads.
    with tempfile.TemporaryDirectory(prefix="sqlcanary-config-") as private:
        resolved = write_resolved(tree.config, Path(private) / f"{tree.label}.json")
        # `--side head`: the pull request's agent, whose cached answers are keyed by its whole tree
        side: Literal["base", "head"] = "head" if tree.label == "head" else "base"
        child = replace(
            tree_request(req, tree, repo, relative=True), out=str(out), config=str(resolved), side=side
        )
        argv = [sys.executable, "-c", code, *child.run_argv()]
        proc = subprocess.Popen(
            argv,
            cwd=tree.cwd,
            env=child_environment(settings, tree, server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        try:
            rc = proc.wait()
        except BaseException:
            _stop(proc)
            raise
    if rc == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if rc not in (0, EXIT_BUG) or not out.is_file():
        raise ConfigError(
            f"evaluating the {tree.label} ({tree.describe()}) failed with exit code {rc}; "
            "the error is printed above"
        )
    # The child never held this process's secrets (its environment is allow-listed), but its agent may have
    # printed one it found: mask them in the run before anything keeps or shows it.
    run = read_run(out)
    if settings.secrets:
        run = redact_model(run, settings.secrets)
        write_run(out, run)
    return run


def _stop(proc: subprocess.Popen) -> None:
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


def suite_roots(req: RunRequest, tree: Tree, repo: Path) -> tuple[str, ...]:
    """The folders, relative to the repository root, that an answer's `used` paths may be relative to: the
    suite's folder, then the config file's."""
    roots: list[str] = []
    suite = tree_request(req, tree, repo, relative=False).suite
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
