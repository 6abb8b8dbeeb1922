"""The two sides of a check, each computed once and passed as one value: its tree, the user's run request moved
into it, and, read once when first asked for, its suite, the cases the request selects and the agent it would
use. `plan_check` makes both (and the worktrees they live in) from a CheckRequest.

This process reads the head side's suite only as data (for the reports' gold SQL and for attribution); it runs
none of it: the head is evaluated by its own `sqlcanary run` child (bot.check.child)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

from bot.base.errors import ConfigError, SqlcanaryError
from bot.base.git import committed_under, default_base_ref, git_sha, resolve_commit, toplevel, worktree
from bot.base.settings import ENV_CACHE_DIR, Settings
from bot.cases.model import Case, Suite
from bot.check.request import CheckRequest
from bot.check.trees import Tree, base_tree, decide_head, open_tree, suite_roots, tree_request
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
        suite, cases = suite_and_cases(self.run, self.tree.config)
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
    """The commits a check compares, checked out: everything git has to say before any tree is read."""

    repo: Path
    base_ref: str
    base_sha: str
    base_root: Path
    head_sha: str | None
    head_root: Path
    working: bool  # the head is the working tree as it is
    planted: tuple[str, ...]  # files a commit put under the cache folder (see _unplanted)


def check_out(req: CheckRequest, settings: Settings, stack: ExitStack) -> Checkout:
    """The base commit (`req.base`, else the default branch) and the head (`req.head`, else the working tree),
    each a temporary worktree entered on `stack`. git gets the allow-listed environment only
    (bot.base.childenv)."""
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
    return Checkout(
        repo=repo,
        base_ref=base_ref,
        base_sha=base_sha,
        base_root=base_root,
        head_sha=head_sha,
        head_root=head_root,
        working=not req.head,
        planted=tuple(planted),
    )


def plan_check(
    req: CheckRequest, settings: Settings, stack: ExitStack, *, out_dir: Path, say: Say
) -> CheckPlan:
    """Both sides, their worktrees entered on `stack`, the head's config decided by the base's
    (bot.config.trusted)."""
    out = check_out(req, settings, stack)
    say(f"base {out.base_ref} ({out.base_sha[:12]}) vs head {req.head or 'working tree'}")
    settings, cache_notes = _unplanted(settings, out.planted, stack)
    run, repo = req.run, out.repo
    head = open_tree(run, label="head", repo=repo, root=out.head_root, sha=out.head_sha, working=out.working)
    try:
        base = base_tree(run, repo=repo, root=out.base_root, sha=out.base_sha)
    except SqlcanaryError as exc:
        raise ConfigError(f"base {out.base_sha[:12]}: {exc}") from exc
    head = decide_head(run, head, base, trust_alone=req.trust_head_config)
    head = replace(head, notes=(*cache_notes, *head.notes))
    for note in head.notes:
        say(note)
    return CheckPlan(
        base_ref=out.base_ref,
        base_sha=out.base_sha,
        base=Side(base, run, repo) if base is not None else None,
        head=Side(head, run, repo),
        base_root=out.base_root,
        settings=settings,
        out_dir=out_dir,
    )


def _unplanted(
    settings: Settings, planted: tuple[str, ...], stack: ExitStack
) -> tuple[Settings, tuple[str, ...]]:
    """The settings with a cache folder no commit planted anything in: when git tracks a file under the cache
    folder, or the head commit holds one, no file there is read (a committed `runs/<key>.json` or answer would
    otherwise decide the verdict); the check runs with a fresh, empty cache instead, and says so."""
    if not planted:
        return settings, ()
    fresh = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sqlcanary-cache-")))
    env = MappingProxyType({**settings.environ, ENV_CACHE_DIR: str(fresh)})
    note = (
        f"the cache folder holds {len(planted)} file(s) a commit put there (`{planted[0]}`): no file there is "
        "read, and this check ran without a cache"
    )
    return replace(settings, cache_dir=fresh, environ=env), (note,)
