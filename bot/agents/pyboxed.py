"""`python:MODULE_OR_FILE:FUNCTION` when sqlcanary runs as root: the function runs in a host process of the
sandbox's user (bot.agents.pyhost), not in the evaluator, so the pull request's Python code holds none of the
evaluator's memory, environment or file descriptors. One host for the run: it imports the target once and calls
it on a thread per request, as the in-process PythonAgent does, so the answers mean the same (a returned string,
`{"sql"}` or `{"error"}`; an exception recorded with its traceback; a timeout that leaves the call behind). A
target that cannot be loaded fails the run before its first case (exit 2); a host that dies fails the cases it
was answering and is started again for the next."""

from __future__ import annotations

import itertools
import json
import os
import queue
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.agents import pyhost
from bot.agents.base import AgentContext, Answer, answer_from_reply, request_for, scrub_answer
from bot.agents.line_process import LineProcess
from bot.agents.pipes import GRACE_S, POLL_S, STDOUT_CAP, exit_words, size_words, text_tail
from bot.base.errors import AgentError
from bot.cases.model import Case

HOST_FILE = Path(pyhost.__file__).resolve()


class _Host:
    """One host process, and the thread that hands each answer line to the call waiting for its `seq`."""

    def __init__(self, name: str, argv: list[str], cwd: str, ctx: AgentContext) -> None:
        self.name = name
        try:
            self.lp = LineProcess(argv, cwd, env=ctx.env, sandbox=ctx.sandbox)
        except OSError as exc:
            raise AgentError(f"{name}: cannot start its host process: {exc.strerror}") from exc
        self.waiting: dict[int, queue.Queue[dict[str, Any] | None]] = {}
        self.dead: Answer | None = None  # why every later call fails
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        hello = self._hello(max(ctx.timeout_s, 30.0))  # loading may import heavy libraries
        if hello.get("sqlcanary_host") != "ready":
            self.lp.stop()
            raise AgentError(str(hello.get("error") or f"{name}: its host process did not start"))
        threading.Thread(target=self._route, daemon=True).start()

    def _hello(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.lp.events.get(timeout=left)
            except queue.Empty:
                break
            if event.kind != "line":
                return {"error": f"{self.name}: its host process ended before loading it{self._last_words()}"}
            hello = _json(event.data)
            if hello is not None and "sqlcanary_host" in hello:
                return hello
        return {"error": f"{self.name}: loading it took longer than {timeout_s:g}s"}

    def _last_words(self) -> str:
        tail = (self.lp.stderr_tail(settle_s=GRACE_S).strip().splitlines() or [""])[-1][:300]
        return f": {tail}" if tail else ""

    def _route(self) -> None:
        while not self.lp.stopped:
            try:
                event = self.lp.events.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if event.kind != "line":
                self._fail(event.kind)
                return
            message = _json(event.data)
            if message is None:
                continue
            with self._lock:
                slot = self.waiting.pop(message.get("seq"), None)  # type: ignore[arg-type]
            if slot is not None:
                slot.put(message)
        self._fail("stopped")

    def _fail(self, how: str) -> None:
        if how == "too_big":
            self.lp.stop()
            dead = Answer(
                error=f"the agent's answer is larger than {size_words(STDOUT_CAP)} (stopped it)",
                error_class="agent_bad_output",
            )
        else:
            code = self.lp.wait_exit(GRACE_S)
            self.lp.stop()
            how = exit_words(code) if code is not None else "stopped answering"
            dead = Answer(
                error=f"the agent's host process {how}{self._last_words()}", error_class="agent_crashed"
            )
        with self._lock:
            self.dead = self.dead or dead
            slots, self.waiting = list(self.waiting.values()), {}
        for slot in slots:
            slot.put(None)

    def ask(self, seq: int, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | Answer | None:
        """The host's answer to `request`, the Answer of its death, or None when it took longer than timeout_s."""
        slot: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=1)
        with self._lock:
            if self.dead is not None:
                return self.dead
            self.waiting[seq] = slot
        deadline = time.monotonic() + timeout_s
        line = (json.dumps({"seq": seq, "request": request}) + "\n").encode()
        try:
            with self._send_lock:
                sent = self.lp.send(line, timeout_s=timeout_s)
        except OSError:  # it is gone: the router says how
            sent = True
        try:
            message = slot.get(timeout=max(0.0, deadline - time.monotonic())) if sent else None
        except queue.Empty:
            message = None
        if message is None:
            with self._lock:
                self.waiting.pop(seq, None)
                return self.dead
        return message

    def close(self) -> None:
        if self.lp.usable():
            try:
                assert self.lp.proc.stdin is not None
                self.lp.proc.stdin.close()
            except OSError:
                pass
            self.lp.wait_exit(2)
        self.lp.stop()


def _json(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class BoxedPythonAgent:
    """`python:MODULE_OR_FILE:FUNCTION` in a host process of the sandbox's user (`ctx.sandbox`)."""

    def __init__(self, target: str, ctx: AgentContext) -> None:
        sandbox = ctx.sandbox
        assert sandbox is not None, "an in-process PythonAgent serves runs without a sandbox"
        self.ctx = ctx
        self.name = f"python:{target}"
        self.cwd = os.getcwd()  # as in process: relative paths and `package.module` targets start here
        base = str(Path(ctx.base_dir).absolute())
        self.argv = [sys.executable, "-c", pyhost.BOOT, str(HOST_FILE), target, base]
        sandbox.check_reachable(Path(base), what="the agent's folder")
        module_part = target.rpartition(":")[0]
        if module_part.endswith(".py") or "/" in module_part:
            sandbox.check_reachable(Path(base) / module_part, what="the agent's file")
        sandbox.check_reachable(Path(sys.executable), what="the Python interpreter", execute=True)
        sandbox.check_reachable(HOST_FILE, what="sqlcanary's agent host")
        sandbox.check_reachable(Path(self.cwd), what="the current folder", read=False)
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._host = _Host(
            self.name, self.argv, self.cwd, ctx
        )  # loads the target now: a bad one fails the run

    def _current(self) -> _Host:
        """The host; a new one when the last died."""
        with self._lock:
            if self._host.dead is not None:
                self._host.close()
                self._host = _Host(self.name, self.argv, self.cwd, self.ctx)
            return self._host

    def answer(self, case: Case) -> Answer:
        return scrub_answer(self._answer(case), self.ctx.secrets)

    def _answer(self, case: Case) -> Answer:
        started = time.perf_counter()
        try:
            host = self._current()
        except AgentError as exc:
            return Answer(error=exc.message, error_class="agent_crashed")
        got = host.ask(next(self._seq), request_for(case, self.ctx), self.ctx.timeout_s)
        if got is None:
            reply = Answer(
                error=f"the agent did not answer within {self.ctx.timeout_s:g}s", error_class="agent_timeout"
            )
        elif isinstance(got, Answer):
            reply = got
        else:
            reply = _reply(got)
        return replace(reply, duration_s=time.perf_counter() - started)

    def close(self) -> None:
        with self._lock:
            self._host.close()


def _reply(message: dict[str, Any]) -> Answer:
    if "raised" in message:
        trace = str(message.get("trace") or "")
        return Answer(
            error=f"the agent raised {message['raised']}",
            error_class="agent_crashed",
            stderr=text_tail(trace.encode()) or None,
        )
    if "returned_type" in message:
        return Answer(
            error=f"the agent returned {message['returned_type']}, expected an object with `sql` or `error`",
            error_class="agent_bad_output",
        )
    return answer_from_reply(message.get("reply"), source="the agent")
