"""The base side's run: evaluated in its own child, or reused from the run cache when everything that decides
it is unchanged; `run_baseline` evaluates a pushed commit of the default branch ahead of the checks that will
use it as their base."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.base.git import git_sha, toplevel
from bot.base.resultfiles import ResultFiles
from bot.base.results import EVALUATOR_VERSION, RunResult
from bot.base.settings import Settings
from bot.base.version import sqlcanary_version
from bot.check.child import evaluate_side
from bot.check.request import CheckRequest
from bot.check.sides import Side
from bot.check.trees import open_tree
from bot.db.provision import Server
from bot.db.templates import fixture_fingerprint
from bot.report.console import cache_line
from bot.run.cache import RunCache, run_cache_key
from bot.run.server import provision_server
from bot.run.setup import fingerprints

Say = Callable[[str], None]


@dataclass(frozen=True)
class BaseKey:
    """A base run's cache key, and what a cached run must record to be used under it."""

    key: str
    sha: str | None
    agent_fingerprint: str
    kb_fingerprint: str

    def matches(self, run: RunResult) -> bool:
        """A cached run is used only when it says it is this commit's, with these fingerprints: a file planted
        under the key's name (by a commit, or another job's cache) is never taken on its name alone."""
        m = run.meta
        return (
            m.git_sha == self.sha
            and m.agent_fingerprint == self.agent_fingerprint
            and m.kb_fingerprint == self.kb_fingerprint
        )


def base_run_key(side: Side, server: Server, settings: Settings) -> BaseKey | None:
    """(base sha, config file, suite, fixtures, agent and KB fingerprints, repeats, perturbed copies, preset, case
    selection, evaluator and sqlcanary versions); None when the agent's answers may change with nothing here
    changing (a remote agent, or one whose inputs cannot be fingerprinted): its base run is then never reused."""
    tree, req, choice = side.tree, side.request, side.agent
    agent_fp, kb_fp = fingerprints(choice, tree.config, side.suite, settings, cwd=str(tree.cwd))
    if agent_fp is None or choice.remote:
        return None
    used = sorted({c.db for c in side.cases})
    config_hash = hashlib.sha256(tree.config_file.read_bytes()).hexdigest() if tree.config_file else ""
    key = run_cache_key(
        {
            "base_sha": tree.sha,
            "config": config_hash,
            "suite": side.suite.content_hash,
            "fixtures": {db: fixture_fingerprint(side.suite.fixtures(db), server) for db in used},
            "agent": agent_fp,
            "kb": kb_fp,
            "repeats": req.repeat,
            "perturb": req.perturb if req.perturb is not None else tree.config.perturb,
            "preset": req.preset or tree.config.preset,
            "cases": [c.id for c in side.cases],
            "statement_timeout": req.statement_timeout or tree.config.statement_timeout,
            "row_cap": req.row_cap or tree.config.row_cap,
            "agent_timeout": choice.timeout_s,
            "evaluator": EVALUATOR_VERSION,
            "sqlcanary": sqlcanary_version(),
        }
    )
    return BaseKey(key=key, sha=tree.sha, agent_fingerprint=agent_fp, kb_fingerprint=kb_fp)


def evaluate_base(
    side: Side, server: Server, out: Path, settings: Settings, *, use_cache: bool, say: Say
) -> tuple[RunResult, bool]:
    """The base commit's run, from the cache when everything that decides it is unchanged (and whether it was)."""
    tree = side.tree
    key = base_run_key(side, server, settings) if use_cache and tree.config.cache.runs else None
    cache = RunCache(settings.cache_dir)
    cached = cache.get(key.key) if key else None
    if key and cached is not None and not key.matches(cached):
        say(
            f"base {tree.describe()}: the cached run {cache.path(key.key)} is not this commit's run (its sha or "
            "fingerprints differ): not used"
        )
        cached = None
    if key and cached is not None:
        say(f"base {tree.describe()}: reusing the cached run {cache.path(key.key)}")
        return ResultFiles(out.parent, settings.secrets).model(out.name, cached), True
    say(f"base {tree.describe()}: evaluating" + ("" if tree.working else " in a temporary worktree"))
    run = evaluate_side(side, server, out, settings)
    if run.meta.cache_hits:
        say(f"base {tree.describe()}: {cache_line(run.meta)}")
    if key and run.meta.complete and not any(c.error_class == "internal_error" for c in run.cases):
        cache.put(key.key, run)
    return run, False


def run_baseline(
    req: CheckRequest, settings: Settings, *, out: Path, say: Say = lambda _: None
) -> tuple[RunResult, bool]:
    """Evaluate the checked-out commit as a future base and cache it (a push to the default branch): a later
    check whose base is this commit then reuses it. The checkout must be clean, as a worktree of it would be."""
    run = req.run.anchored()
    repo = toplevel(run.folder, environ=settings.environ)
    sha = git_sha(repo, environ=settings.environ)
    side = Side(open_tree(run, label="base", repo=repo, root=repo, sha=sha, working=True), run, repo)
    server = provision_server(run.dsn, side.config, settings, run.postgres)
    return evaluate_base(side, server, out, settings, use_cache=not req.no_base_cache, say=say)
