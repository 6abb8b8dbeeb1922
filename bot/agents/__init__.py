"""Agent adapters behind one protocol, chosen by a spec string (`gold`, `predictions:PATH`, `run:PATH`,
`command:CMD`, `python:MODULE_OR_FILE:FUNCTION`) from a plain dict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.agents.base import AgentAdapter, AgentContext, Answer
from bot.agents.process import CommandAgent, PersistentCommandAgent, PythonAgent
from bot.agents.simple import GoldAgent, PredictionsAgent
from bot.base.errors import AgentError

__all__ = ["AgentAdapter", "AgentContext", "Answer", "make_agent", "ADAPTERS"]


def _path(arg: str, ctx: AgentContext) -> Path:
    p = Path(arg)
    return p if p.is_absolute() or p.exists() else Path(ctx.base_dir) / p


def _command(arg: str, ctx: AgentContext) -> AgentAdapter:
    if ctx.options.get("persistent"):
        return PersistentCommandAgent(arg, ctx)
    return CommandAgent(arg, ctx)


ADAPTERS: dict[str, Callable[[str, AgentContext], AgentAdapter]] = {
    "gold": lambda arg, ctx: GoldAgent(arg or "first"),
    "predictions": lambda arg, ctx: PredictionsAgent.from_file(_path(arg, ctx)),
    "run": lambda arg, ctx: PredictionsAgent.from_run(_path(arg, ctx)),
    "command": _command,
    "python": lambda arg, ctx: _python(arg, ctx),
    "llm": lambda arg, ctx: _llm(arg, ctx),
}
OPTIONAL_ARG = ("gold", "llm")  # kinds that work without `:ARG`


def _python(arg: str, ctx: AgentContext) -> AgentAdapter:
    """In this process, or (when sqlcanary runs as root) in a host process of the sandbox's user."""
    if ctx.sandbox is None:
        return PythonAgent(arg, ctx)
    from bot.agents.pyboxed import BoxedPythonAgent

    return BoxedPythonAgent(arg, ctx)


def _llm(arg: str, ctx: AgentContext) -> AgentAdapter:
    from bot.agents.llm import LLMAgent  # imports the openai package only when asked for

    return LLMAgent(arg, ctx)


def make_agent(spec: str, ctx: AgentContext | None = None) -> AgentAdapter:
    """Raises AgentError when the agent cannot work at all (an unknown kind, a command that cannot start, a
    missing file), so a run fails before its first case instead of erroring every one of them."""
    ctx = ctx or AgentContext()
    kind, _, arg = spec.partition(":")
    factory = ADAPTERS.get(kind.strip())
    if factory is None:
        raise AgentError(f"unknown agent {spec!r} (known kinds: {', '.join(ADAPTERS)})")
    if kind not in OPTIONAL_ARG and not arg.strip():
        raise AgentError(f"agent {kind!r} needs an argument: {kind}:...")
    return factory(arg.strip(), ctx)
