"""`python:MODULE_OR_FILE:FUNCTION`: an agent that is a function in this process, called on a worker thread so
a slow one can be timed out and a raising one recorded on its case."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.agents.base import AgentContext, Answer, answer_from_reply, request_for, scrub_answer
from bot.agents.pipes import STDERR_KEEP
from bot.agents.pyhost import LoadError, load_target
from bot.base.errors import AgentError
from bot.cases.model import Case


def load_callable(target: str, base_dir: str) -> Callable[..., Any]:
    """`path/to/file.py:func` or `package.module:func`, imported into this process."""
    try:
        return load_target(target, base_dir)
    except LoadError as exc:
        raise AgentError(str(exc)) from exc.__cause__


class PythonAgent:
    """`python:MODULE_OR_FILE:FUNCTION`: FUNCTION(request: dict) returns SQL, `{"sql": ...}` or `{"error": ...}`.

    It runs in this process, so `ctx.env` cannot apply to it: its isolation from the tokens is the per-tree child
    process `sqlcanary check` starts with the allow-listed environment (bot.agents.env). When sqlcanary runs as
    root (`ctx.sandbox`), make_agent picks bot.agents.pyboxed.BoxedPythonAgent instead: the same function in a
    host process of the sandbox's user. `ctx.secrets` are masked out of its answers (a traceback quoting a
    token, say)."""

    def __init__(self, target: str, ctx: AgentContext) -> None:
        self.fn = load_callable(target, ctx.base_dir)
        self.ctx = ctx
        self.name = f"python:{target}"

    def answer(self, case: Case) -> Answer:
        return scrub_answer(self._answer(case), self.ctx.secrets)

    def _answer(self, case: Case) -> Answer:
        box: dict[str, Any] = {}
        request = request_for(case, self.ctx)

        def call() -> None:
            try:
                box["reply"] = self.fn(request)
            except Exception as exc:  # noqa: BLE001 - the agent's own failure, recorded on the case
                box["error"] = f"{type(exc).__name__}: {exc}"
                box["trace"] = traceback.format_exc()[-STDERR_KEEP:]

        started = time.perf_counter()
        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(self.ctx.timeout_s)
        took = time.perf_counter() - started
        if worker.is_alive():
            return Answer(
                error=f"the agent did not answer within {self.ctx.timeout_s:g}s",
                error_class="agent_timeout",
                duration_s=took,
            )
        if "error" in box:
            return Answer(
                error=f"the agent raised {box['error']}",
                error_class="agent_crashed",
                stderr=box["trace"],
                duration_s=took,
            )
        return replace(answer_from_reply(box.get("reply"), source="the agent"), duration_s=took)

    def close(self) -> None:
        pass
