"""A run, set up: the one way to choose and build an agent (and its sandbox's arguments), its fingerprints and
answer cache, the suite and the cases a request selects, and the run's options. `sqlcanary run`, the check's
per-tree runs and the repair loop all build their agent here."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.agents import AgentContext, make_agent
from bot.agents.env import agent_environment
from bot.agents.sandbox import Sandbox
from bot.base.errors import ConfigError
from bot.base.git import git_sha, repo_root
from bot.base.results import LLMUsage
from bot.base.settings import Settings
from bot.cases.fields import parse_duration_ms
from bot.cases.loader import load_suite
from bot.cases.model import Case, Suite
from bot.cases.selection import in_shard, parse_shard, select_cases
from bot.cases.suite_doc import read_suite_doc
from bot.config.model import Config
from bot.run.cache import AnswerCache
from bot.run.fingerprint import (
    AgentInputs,
    agent_fingerprint,
    config_digest,
    kb_fingerprint,
    uses_answer_cache,
)
from bot.run.request import RunRequest
from bot.run.runner import RunOptions


@dataclass(frozen=True)
class AgentChoice:
    """The agent a run uses, before it is started: enough to fingerprint it."""

    spec: str
    options: dict[str, Any]
    base_dir: str
    timeout_s: float
    inputs: AgentInputs = AgentInputs()
    remote: bool = False

    def start(self, settings: Settings, sandbox: Sandbox | None = None, suite: Suite | None = None):
        """The agent, started: a process agent gets only the allow-listed environment (plus `agent.env`), and
        every secret of `settings` is masked out of what it answers; with a sandbox, every process of the agent
        runs as its unprivileged user (bot.agents.sandbox)."""
        env = agent_environment(settings.environ, allow=self.inputs.env)
        return make_agent(
            self.spec,
            AgentContext(
                base_dir=self.base_dir,
                options=self.options,
                timeout_s=self.timeout_s,
                env=env,
                secrets=settings.secrets,
                settings=settings,
                sandbox=sandbox,
                suite=suite,
            ),
        )


def choose_agent(req: RunRequest, config: Config, *, cwd: str | None = None) -> AgentChoice:
    spec = req.agent or (config.agent.spec if config.agent else "gold")
    from_config = not req.agent and config.agent is not None
    timeout = req.agent_timeout or (config.agent.timeout if config.agent else 120.0)
    options = dict(config.agent.options) if config.agent and from_config else {}
    if req.persistent or (config.agent and from_config and config.agent.persistent):
        options["persistent"] = True
    base = config.base_dir if from_config else (cwd or os.getcwd())
    if spec.partition(":")[0].strip() == "llm" and config.config_file and "config" not in options:
        options["config"] = config.config_file  # the llm agent reads its `llm:` settings and `kb.paths` there
    declared = config.agent if from_config and config.agent else None
    inputs = AgentInputs(globs=declared.inputs, env=declared.env) if declared else AgentInputs()
    if req.side == "head":  # the pull request's agent: `agent.inputs` may not narrow what keys its answers
        inputs = replace(inputs, whole_tree=True)
    return AgentChoice(
        spec=spec,
        options=options,
        base_dir=base,
        timeout_s=timeout,
        inputs=inputs,
        remote=bool(declared and declared.remote),
    )


def fingerprints(
    choice: AgentChoice,
    config: Config,
    suite: Suite,
    settings: Settings,
    *,
    cwd: str | None = None,
    outputs: tuple[Path, ...] = (),
) -> tuple[str | None, str]:
    """(agent fingerprint, KB fingerprint) of a run of `suite` started in `cwd` (default: the current folder).
    The agent fingerprint is None when what the agent reads cannot be known: its answers are then not cached.
    A check's head (`inputs.whole_tree`) is fingerprinted by its whole tree and the resolved config; `outputs`
    (the folders the run writes) then never count."""
    kb_fp = kb_fingerprint(config)
    whole = choice.inputs.whole_tree
    agent_fp = agent_fingerprint(
        choice.spec,
        choice.options,
        choice.base_dir,
        kb_fp,
        cwd=cwd,
        inputs=choice.inputs,
        environ=settings.environ,
        exclude=() if whole else suite.files,
        config_fp=config_digest(config) if whole else "",
        outputs=(settings.cache_dir, *outputs) if whole else (),
    )
    return agent_fp, kb_fp


def cache_basis(choice: AgentChoice) -> str:
    """Why an answer from the cache may be trusted: what the agent fingerprint keying it covers."""
    base = Path(choice.base_dir)
    if choice.inputs.whole_tree:
        sha = git_sha(base)
        return f"the whole head tree at {sha[:12]}" if sha else "the whole head folder"
    if choice.inputs.globs is not None:
        n = len(choice.inputs.globs)
        return f"agent.inputs: {n} glob{'s' if n != 1 else ''}"
    return "every file of the repository" if repo_root(base) else "every file of the config folder"


def answer_cache(
    req: RunRequest, config: Config, choice: AgentChoice, settings: Settings
) -> AnswerCache | None:
    enabled = config.cache.answers and not req.no_answer_cache and settings.answer_cache
    usable = enabled and uses_answer_cache(choice.spec) and not choice.remote
    return AnswerCache(settings.cache_dir) if usable else None


def suite_loader(req: RunRequest) -> Callable[[str], Suite]:
    """How a run reads its suite: parsed from its files, or, for a check's head, taken from the suite data the
    check wrote (`--suite-data`: bot.cases.suite_doc)."""
    data = req.suite_data
    if data is None:
        return load_suite
    return lambda location: read_suite_doc(data, location)


def suite_and_cases(
    req: RunRequest, config: Config, *, load: Callable[[str], Suite] = load_suite
) -> tuple[Suite, list[Case]]:
    """The suite (argument, else the config's `suite:`) and the cases the filters and --shard select; `load`
    reads the suite (a check's head: from what its reader read, bot.check.head_reader)."""
    suite_path = req.suite or (str(config.path(config.suite)) if config.suite else None)
    if not suite_path:
        raise ConfigError("no suite given: pass a suite folder or set `suite:` in sqlcanary.yml")
    suite = load(suite_path)
    cases = select_cases(suite.cases, tags=list(req.tags) or None, ids=list(req.ids) or None)
    if not cases:
        raise ConfigError("no case matches the filters" if req.filters else "the suite has no cases")
    if req.shard:
        cases = [c for c in cases if in_shard(c.id, parse_shard(req.shard))]
    return suite, cases


class LLMJudge:
    """The `--llm-judge` diagnostic: one client (cache and budget of the config's `llm:`) for the whole run,
    its usage kept in the run's `meta.llm_judge`."""

    def __init__(self, config: Config, settings: Settings) -> None:
        from bot.llm import LLMClient
        from bot.llm.cache import ReplyCache

        self.client = LLMClient(
            config.llm, environ=settings.environ, cache=ReplyCache(settings.cache_dir / "llm")
        )

    def __call__(self, case: Case, sql: str):
        from bot.scoring.llm_judge import llm_judge_verdict

        return llm_judge_verdict(self.client, case.question, case.gold_sql[0], sql)

    def llm_usage(self) -> LLMUsage:
        from bot.llm.usage import usage_record

        return usage_record(self.client)


def run_options(
    req: RunRequest,
    config: Config,
    choice: AgentChoice,
    suite: Suite,
    settings: Settings,
    *,
    out: Path | None,
) -> RunOptions:
    outputs = (out.parent,) if out else ()
    agent_fp, kb_fp = fingerprints(choice, config, suite, settings, cwd=str(req.folder), outputs=outputs)
    cache = answer_cache(req, config, choice, settings) if agent_fp else None
    basis = cache_basis(choice) if cache is not None else None
    shard = str(parse_shard(req.shard)) if req.shard else None
    timeout = req.statement_timeout or config.statement_timeout
    timeout_ms = parse_duration_ms(timeout, path="--statement-timeout", line=None) if timeout else None
    return RunOptions(
        jobs=req.jobs or config.jobs or 2,
        preset=req.preset or config.preset,
        statement_timeout_ms=timeout_ms,
        row_cap=req.row_cap or config.row_cap,
        structural=req.structural,
        judge=LLMJudge(config, settings) if req.llm_judge else None,
        out=out,
        filters=req.filters,
        repeats=req.repeat,
        perturb=req.perturb if req.perturb is not None else config.perturb,
        perturb_rankings=settings.cache_dir / "perturb-rankings.json",
        query_costs=settings.cache_dir / "query-costs.json",
        shard=shard,
        agent_fingerprint=agent_fp or "",
        kb_fingerprint=kb_fp,
        answer_cache=cache,
        cache_basis=basis,
    )


def default_run_options(config: Config) -> RunOptions:
    timeout = config.statement_timeout
    ms = parse_duration_ms(timeout, path="sqlcanary.yml", line=None) if timeout else None
    return RunOptions(
        jobs=config.jobs or 2, preset=config.preset, statement_timeout_ms=ms, row_cap=config.row_cap
    )
