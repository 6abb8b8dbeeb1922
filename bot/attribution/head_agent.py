"""The agent the head was run with, as the evaluator (bot.attribution.evaluator) starts it again on its copy of
the tree: any object with its fields (AgentLike), or AgentSetup, a plain copy, built from the config as `sqlcanary
run` without --agent chooses it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.config.model import Config
from bot.run.fingerprint import AgentInputs


class AgentLike(Protocol):
    """The agent the head was run with: bot.run.setup.AgentChoice, or AgentSetup."""

    @property
    def spec(self) -> str: ...
    @property
    def options(self) -> dict[str, Any]: ...
    @property
    def base_dir(self) -> str: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def inputs(self) -> AgentInputs: ...
    @property
    def remote(self) -> bool: ...


@dataclass(frozen=True)
class AgentSetup:
    spec: str
    options: dict[str, Any] = field(default_factory=dict)
    base_dir: str = "."
    timeout_s: float = 120.0
    inputs: AgentInputs = AgentInputs()
    remote: bool = False

    @classmethod
    def from_config(cls, config: Config) -> AgentSetup:
        """The config's agent, as `sqlcanary run` without --agent chooses it (gold when none is set)."""
        agent = config.agent
        if agent is None:
            return cls(spec="gold", base_dir=config.base_dir)
        options = dict(agent.options) | ({"persistent": True} if agent.persistent else {})
        if agent.spec.partition(":")[0].strip() == "llm" and config.config_file and "config" not in options:
            options["config"] = config.config_file
        return cls(
            spec=agent.spec,
            options=options,
            base_dir=config.base_dir,
            timeout_s=agent.timeout,
            inputs=AgentInputs(globs=agent.inputs, env=agent.env),
            remote=agent.remote,
        )
