"""An agent started the way `sqlcanary run` starts one: inside a sandbox of its own (bot.agents.sandbox) when it
runs the pull request's code and sqlcanary is root, so it never runs next to the write token and the LLM key as
root. Closing the agent closes its sandbox (every process of the sandbox's user is killed)."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from bot.agents import AgentContext, make_agent
from bot.agents.base import AgentAdapter, Answer
from bot.agents.sandbox import agent_sandbox
from bot.cases.model import Case


class SandboxedAgent:
    """An agent and the sandbox it runs in, closed together."""

    def __init__(self, agent: AgentAdapter, stack: ExitStack, isolation: str) -> None:
        self.agent = agent
        self.name = agent.name
        self.isolation = isolation  # what `meta.sandbox` records: "uid 61234"
        self._stack = stack

    def answer(self, case: Case) -> Answer:
        return self.agent.answer(case)

    def close(self) -> None:
        try:
            self.agent.close()
        finally:
            self._stack.close()

    def __getattr__(self, name: str) -> Any:  # llm_usage() and the like, when the agent has them
        return getattr(self.agent, name)


def start_agent(spec: str, ctx: AgentContext) -> AgentAdapter:
    """make_agent(spec, ctx), inside a fresh sandbox when the agent runs code of the pull request's (`command:`,
    `python:`) and sqlcanary is root; a `python:` agent then runs in a host process of the sandbox's user, never
    in this process."""
    stack = ExitStack()
    try:
        sandbox, isolation = stack.enter_context(agent_sandbox(spec))
        agent = make_agent(spec, replace(ctx, sandbox=sandbox))
    except BaseException:
        stack.close()
        raise
    if sandbox is None:
        stack.close()
        return agent
    return SandboxedAgent(agent, stack, isolation or sandbox.describe())
