"""How a repair is set up: its limits, the agent each re-run of the suite uses, the run options, and the
cap on the LLM client's own call budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from bot.agents import AgentContext
from bot.agents.base import AgentAdapter
from bot.agents.env import agent_environment
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.config.model import Config
from bot.llm.protocol import JsonLLM
from bot.run.sandboxed import start_agent


@dataclass(frozen=True)
class Limits:
    max_failures: int = 5
    max_retries: int = 3
    max_llm_calls: int = 50
    max_critique: int = 5
    # A retry after a refusal, at temperature 0, gives the same plan back (the trial saw it 3 times in a row):
    # retries sample at least this warm. Every plan is verified whatever its temperature.
    retry_temperature: float = 0.6
    # Room for one plan's reply: a plan is a few edits; a whole file sent as `content` gets room for the
    # largest file shown. A small model that loops runs to this cap (the trial: 2,048 tokens, 5 minutes).
    plan_tokens: int = 1024
    # Seconds the loop may spend before it stops asking (None: no limit); the Action's `repair-max-minutes`.
    max_seconds: float | None = None
    # How the user set max_llm_calls, named when it is spent: the CLI's flag (the Action: `repair-max-llm-calls`).
    calls_flag: str = "--max-llm-calls"


def budget_spent(limits: Limits, config_max_calls: int | None, detail: str = "") -> str:
    """Why the loop stopped asking, naming the limit the user set: `--max-llm-calls N` (the flag given), or the
    config's `llm.budget.max_calls` when that one is the tighter (`detail`: the client's own message)."""
    if config_max_calls is not None and config_max_calls < limits.max_llm_calls and detail:
        return f"LLM call budget spent: {detail}"
    n = limits.max_llm_calls
    return (
        f"LLM call budget spent: {limits.calls_flag} {n} allows {n} LLM call{'' if n == 1 else 's'} and all "
        f"were used (raise {limits.calls_flag} to let the repair ask more)"
    )


def default_agent_factory(
    config: Config, settings: Settings | None = None, suite: Suite | None = None
) -> Callable[[], AgentAdapter]:
    """A fresh agent per run (run_suite closes it); it reads the KB from disk, so edits take effect. With
    `settings`, a process agent gets only the allow-listed environment and its answers are masked. Started as
    `sqlcanary run` starts it: an agent running the pull request's code runs in a sandbox of its own when
    sqlcanary is root, closed with the agent (bot.run.sandboxed)."""
    spec = config.agent.spec if config.agent else "gold"
    options = dict(config.agent.options) if config.agent else {}
    if config.agent and config.agent.persistent:
        options["persistent"] = True
    timeout = config.agent.timeout if config.agent else 120.0
    ctx = AgentContext(base_dir=config.base_dir, options=options, timeout_s=timeout, suite=suite)
    if settings is not None:
        allow = config.agent.env if config.agent else ()
        ctx = replace(
            ctx,
            env=agent_environment(settings.environ, allow=allow),
            secrets=settings.secrets,
            settings=settings,
        )
    return lambda: start_agent(spec, ctx)


def cap_budget(client: JsonLLM | None, max_llm_calls: int) -> None:
    """Tighten the client's own call budget so the endpoint never sees more than `max_llm_calls` requests
    from this repair, re-asks for unusable JSON included (the loop's own count sees only plans)."""
    if client is None:
        return
    budget = client.budget
    cap = budget.calls + max_llm_calls
    if budget.max_calls is None or budget.max_calls > cap:
        budget.max_calls = cap


def make_client(config: Config, *, max_calls: int, settings: Settings):
    """The LLM client, its call budget capped at --max-llm-calls (the endpoint never sees more requests)."""
    from bot.llm import LLMClient
    from bot.llm.cache import ReplyCache

    llm = config.llm
    cap = min(max_calls, llm.budget.max_calls) if llm.budget.max_calls is not None else max_calls
    llm = llm.model_copy(update={"budget": llm.budget.model_copy(update={"max_calls": cap})})
    return LLMClient(llm, environ=settings.environ, cache=ReplyCache(settings.cache_dir / "llm"))
