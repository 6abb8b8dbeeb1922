"""A check's head run reused whole, when nothing that decides it has changed (a warm check judges nothing again).

Only the head's run of a check (`--side head`) is reused, and only when its answers may come from the answer cache
at all: its agent's fingerprint covers the whole head tree and the config the check decided (bot.run.setup
`fingerprints`), so a cached head run is another check's run of this very tree. The key holds everything else
that decides a verdict: the suite and the cases chosen, the fixtures (as their templates are keyed), the preset,
limits, repeats and perturbed copies, the evaluator's and sqlcanary's versions. A cached run is used only when it
records the same fingerprints (a file planted under the key's name is never taken on its name alone), and only a
complete run with no internal error is kept. `SQLCANARY_ANSWER_CACHE=off`, `cache.runs: false`, `--last-failed`,
`--exitfirst`, a shard and `--llm-judge` always judge again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.base.results import EVALUATOR_VERSION, RunResult
from bot.base.settings import Settings
from bot.base.version import sqlcanary_version
from bot.cases.model import Case, Suite
from bot.config.model import Config
from bot.db.provision import Server
from bot.db.templates import fixture_fingerprint
from bot.run.cache import RunCache, run_cache_key
from bot.run.fingerprint import config_digest
from bot.run.request import RunRequest
from bot.run.runner import RunOptions


@dataclass(frozen=True)
class HeadRunKey:
    key: str
    agent_fingerprint: str
    kb_fingerprint: str
    suite_hash: str

    def matches(self, run: RunResult) -> bool:
        m = run.meta
        return (
            m.agent_fingerprint == self.agent_fingerprint
            and m.kb_fingerprint == self.kb_fingerprint
            and m.suite_hash == self.suite_hash
            and bool(m.complete)
        )


def may_reuse(req: RunRequest, config: Config, opts: RunOptions) -> bool:
    """Whether this run is a check's head whose whole run may come from the cache (before anything is started:
    a run that may not looks at no cache and keeps its order, the agent started before the database)."""
    return not (
        req.side != "head"
        or opts.answer_cache is None
        or not opts.agent_fingerprint
        or not config.cache.runs
        or req.last_failed
        or req.exitfirst
        or opts.shard
        or opts.judge is not None
    )


def head_run_key(
    req: RunRequest,
    config: Config,
    suite: Suite,
    cases: list[Case],
    opts: RunOptions,
    server: Server,
    *,
    spec: str,
    agent_timeout: float | None,
) -> HeadRunKey | None:
    """The key of this head run, or None when it must be judged again whatever the cache holds."""
    if not may_reuse(req, config, opts):
        return None
    used = sorted({c.db for c in cases})
    key = run_cache_key(
        {
            "side": "head",
            "config": config_digest(config),
            "suite": suite.content_hash,
            "fixtures": {db: fixture_fingerprint(suite.fixtures(db), server) for db in used},
            "agent": opts.agent_fingerprint,
            "spec": spec,
            "kb": opts.kb_fingerprint,
            "cases": [c.id for c in cases],
            "repeats": opts.repeats,
            "perturb": opts.perturb,
            "preset": opts.preset,
            "statement_timeout_ms": opts.statement_timeout_ms,
            "row_cap": opts.row_cap,
            "structural": opts.structural,
            "agent_timeout": agent_timeout,
            "filters": opts.filters,
            "evaluator": EVALUATOR_VERSION,
            "sqlcanary": sqlcanary_version(),
        }
    )
    return HeadRunKey(key, opts.agent_fingerprint, opts.kb_fingerprint, suite.content_hash)


def cached_head_run(key: HeadRunKey | None, settings: Settings) -> tuple[RunResult, Path] | None:
    """The cached run under `key` that records its fingerprints, and where it is; None on a miss. Its every
    answer now comes from a cache: its meta says so (no agent call, every answer a cache hit, `reused_from`)."""
    if key is None:
        return None
    cache = RunCache(settings.cache_dir)
    run = cache.get(key.key)
    if run is None or not key.matches(run):
        return None
    answers = run.meta.agent_calls + run.meta.cache_hits
    update = {
        "agent_calls": 0,
        "cache_hits": answers,
        "reused_from": run.meta.started_at or "an earlier check",
    }
    meta = run.meta.model_copy(update=update)
    return run.model_copy(update={"meta": meta}), cache.path(key.key)


def keep_head_run(key: HeadRunKey | None, run: RunResult, settings: Settings) -> None:
    """Keep a complete head run with no internal error under `key`."""
    if key is None or not run.meta.complete or any(c.error_class == "internal_error" for c in run.cases):
        return
    RunCache(settings.cache_dir).put(key.key, run)
