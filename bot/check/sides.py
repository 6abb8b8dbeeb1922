"""The two sides of a check, each computed once and passed as one value: its tree, the user's run request moved
into it, and, read once when first asked for, its suite, the cases the request selects and the agent it would
use. `plan_check` makes both (and the worktrees they live in) from a CheckRequest.

This process parses none of the head's files: its config and suite are read apart, by a child that holds no
secret (bot.check.head_reader), and taken here as validated data (for the reports' gold SQL, for attribution and
the repair); the head is evaluated by its own `sqlcanary run` child (bot.check.child)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

from bot.base.errors import SqlcanaryError
from bot.base.git import committed_under, default_base_ref, git_sha, resolve_commit, toplevel
from bot.base.settings import ENV_CACHE_DIR, Settings
from bot.base.worktree import worktree
from bot.cases.loader import load_suite
from bot.cases.model import Case, Suite
from bot.check.head_reader import HeadFiles, ReadRequest, read_head
from bot.check.request import CheckRequest
from bot.check.trees import Roots, Tree, open_trees, suite_roots, tree_request
from bot.config.model import Config
from bot.run.request import RunRequest
from bot.run.setup import AgentChoice, choose_agent, suite_and_cases

Say = Callable[[str], None]


@dataclass(frozen=True)
class Side:
    """One side: `tree` and the user's `request` (paths as the user gave them) with `repo`, the checkout's
    root, to move them into the tree."""

    tree: Tree
    request: RunRequest
    repo: Path

    @property
    def label(self) -> str:
        return self.tree.label

    @property
    def config(self) -> Config:
        return self.tree.config

    def describe(self) -> str:
        return self.tree.describe()

    @cached_property
    def run(self) -> RunRequest:
        """The request with its suite and config moved into the tree (absolute paths)."""
        return tree_request(self.request, self.tree, self.repo, relative=False)

    @cached_property
    def relative_run(self) -> RunRequest:
        """The request as the side's child takes it: its suite and config relative to the tree's folder."""
        return tree_request(self.request, self.tree, self.repo, relative=True)

    @cached_property
    def selected(self) -> tuple[Suite, tuple[Case, ...]]:
        """The suite and the cases the request selects, read once."""
        files = self.tree.files  # the head's suite, as read apart (bot.check.head_reader)
        suite, cases = suite_and_cases(self.run, self.tree.config, load=files.suite if files else load_suite)
        return suite, tuple(cases)

    @property
    def suite(self) -> Suite:
        return self.selected[0]

    @property
    def cases(self) -> tuple[Case, ...]:
        return self.selected[1]

    @cached_property
    def agent(self) -> AgentChoice:
        return choose_agent(self.run, self.tree.config, cwd=str(self.tree.cwd))

    @cached_property
    def roots(self) -> tuple[str, ...]:
        """The folders an answer's `used` paths may be relative to (bot.check.trees.suite_roots)."""
        return suite_roots(self.run, self.tree)

    def read_suite(self) -> Suite | None:
        """The suite, or None when it cannot be read (the side's run already said why)."""
        try:
            return self.suite
        except SqlcanaryError:
            return None

    def gold(self) -> dict[str, tuple[str, ...]]:
        """{case id: gold SQL alternatives}, for the reports; {} when the suite cannot be read (the side's run
        already said why)."""
        try:
            return {c.id: tuple(c.gold_sql) for c in self.cases}
        except SqlcanaryError:
            return {}


@dataclass(frozen=True)
class CheckPlan:
    """What a check compares, decided before anything is evaluated."""

    base_ref: str
    base_sha: str
    base: Side | None  # None: the base commit has no sqlcanary config (the pull request that adds it)
    head: Side
    base_root: Path  # the base commit's worktree (attribution reverts the head's KB towards it)
    settings: Settings  # with a fresh cache when a commit planted files in the cache folder
    out_dir: Path

    @property
    def repo(self) -> Path:
        return self.head.repo


@dataclass(frozen=True)
class Checkout:
    """The commits a check compares, checked out, and the settings to evaluate them with: everything git has to
    say before any tree is read."""

    base_ref: str
    roots: Roots
    settings: Settings  # with a fresh cache when a commit planted files in the cache folder
    notes: tuple[str, ...]  # why the cache is fresh


def check_out(req: CheckRequest, settings: Settings, stack: ExitStack) -> Checkout:
    """The base commit (`req.base`, else the default branch) and the head (`req.head`, else the working tree),
    each a temporary worktree entered on `stack`. git gets the allow-listed environment only
    (bot.base.childenv). When git tracks a file under the cache folder, or the head commit holds one, no file
    there is read (a committed `runs/<key>.json` or answer would otherwise decide the verdict): the check runs
    with a fresh, empty cache instead, and says so."""
    env = settings.environ
    repo = toplevel(req.run.folder, environ=env)
    base_ref = req.base or default_base_ref(repo, settings.base_branch, environ=env)
    base_sha = resolve_commit(repo, base_ref, environ=env)
    if req.head:
        head_sha: str | None = resolve_commit(repo, req.head, environ=env)
        head_root = stack.enter_context(worktree(repo, head_sha or "", label="head", environ=env))
    else:
        head_sha, head_root = git_sha(repo, environ=env), repo
    revs = ("HEAD", head_sha) if req.head and head_sha else ("HEAD",)
    planted = committed_under(repo, settings.cache_dir, revs, environ=env)
    base_root = stack.enter_context(worktree(repo, base_sha, label="base", environ=env))
    roots = Roots(repo, base_root, base_sha, head_root, head_sha, working=not req.head)
    if not planted:
        return Checkout(base_ref, roots, settings, ())
    fresh = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sqlcanary-cache-")))
    fresh_env = MappingProxyType({**env, ENV_CACHE_DIR: str(fresh)})
    note = (
        f"the cache folder holds {len(planted)} file(s) a commit put there (`{planted[0]}`): no file there is "
        "read, and this check ran without a cache"
    )
    return Checkout(base_ref, roots, replace(settings, cache_dir=fresh, environ=fresh_env), (note,))


def plan_check(
    req: CheckRequest, settings: Settings, stack: ExitStack, *, out_dir: Path, say: Say
) -> CheckPlan:
    """Both sides, their worktrees entered on `stack`, the head's config decided by the base's
    (bot.config.trusted)."""
    out = check_out(req, settings, stack)
    roots = out.roots
    say(f"base {out.base_ref} ({roots.base_sha[:12]}) vs head {req.head or 'working tree'}")

    def read(request: ReadRequest, cwd: Path) -> HeadFiles:
        return read_head(request, cwd, out.settings.environ, say=say)

    head, base = open_trees(req.run, roots, trust_alone=req.trust_head_config, read=read)
    head = replace(head, notes=(*out.notes, *head.notes))
    for note in head.notes:
        say(note)
    return CheckPlan(
        base_ref=out.base_ref,
        base_sha=roots.base_sha,
        base=Side(base, req.run, roots.repo) if base is not None else None,
        head=Side(head, req.run, roots.repo),
        base_root=roots.base_root,
        settings=out.settings,
        out_dir=out_dir,
    )
