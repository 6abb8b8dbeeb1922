"""`python:MODULE_OR_FILE:FUNCTION`: an agent that is a function in this process, called on a worker thread so
a slow one can be timed out and a raising one recorded on its case."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.agents.base import AgentContext, Answer, answer_from_reply, request_for, scrub_answer
from bot.agents.pipes import STDERR_KEEP
from bot.cases.model import Case
from bot.errors import AgentError


def load_callable(target: str, base_dir: str) -> Callable[..., Any]:
    """`path/to/file.py:func` or `package.module:func`."""
    module_part, sep, func_name = target.rpartition(":")
    if not sep or not module_part or not func_name:
        raise AgentError(f"python agent: expected MODULE_OR_FILE:FUNCTION, got {target!r}")
    try:
        if module_part.endswith(".py") or "/" in module_part:
            path = Path(module_part)
            if not path.is_absolute():
                path = Path(base_dir) / path
            if not path.is_file():
                raise AgentError(f"python agent: no such file {path}")
            spec = importlib.util.spec_from_file_location(f"sqlcanary_agent_{abs(hash(str(path)))}", path)
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_part)
    except AgentError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code failing at import
        raise AgentError(
            f"python agent: importing {module_part} failed: {type(exc).__name__}: {exc}"
        ) from exc
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise AgentError(f"python agent: {module_part} has no function {func_name!r}")
    return fn


class PythonAgent:
    """`python:MODULE_OR_FILE:FUNCTION`: FUNCTION(request: dict) returns SQL, `{"sql": ...}` or `{"error": ...}`.

    It runs in this process, so `ctx.env` cannot apply to it: its isolation from the tokens is the per-tree child
    process `sqlcanary check` starts with the allow-listed environment (bot.agents.env). `ctx.secrets` are masked
    out of its answers (a traceback quoting a token, say)."""

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
