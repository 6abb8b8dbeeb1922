"""Agents in other processes or modules: `command:CMD` (a process per case, or a long-lived JSON-lines one)
and `python:MODULE_OR_FILE:FUNCTION`."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.agents.base import AgentContext, Answer, answer_from_reply, parse_reply_text, request_for
from bot.cases.model import Case
from bot.errors import AgentError

_STDERR_KEEP = 4000
_NOISE_GRACE_S = 1.0  # after a line that is not this case's answer, how long to wait for the real one


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


class CommandAgent:
    """`command:CMD`: CMD gets one JSON request on stdin and prints one JSON answer, once per case."""

    def __init__(self, cmd: str, ctx: AgentContext) -> None:
        self.argv = shlex.split(cmd)
        if not self.argv:
            raise AgentError("command agent: empty command")
        self.ctx = ctx
        self.name = f"command:{cmd}"

    def answer(self, case: Case) -> Answer:
        payload = json.dumps(request_for(case, self.ctx))
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                self.argv,
                cwd=self.ctx.base_dir,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            return Answer(
                error=f"cannot start the agent command {self.argv[0]!r}: {exc.strerror}",
                error_class="agent_crashed",
            )
        try:
            out, err = proc.communicate(payload, timeout=self.ctx.timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return Answer(
                error=f"the agent did not answer within {self.ctx.timeout_s:g}s",
                error_class="agent_timeout",
                duration_s=time.perf_counter() - started,
            )
        stderr = err[-_STDERR_KEEP:] if err else None
        if proc.returncode != 0:
            tail = (err or "").strip().splitlines()[-1:] or [""]
            return Answer(
                error=f"the agent exited with code {proc.returncode}: {tail[0][:300]}",
                error_class="agent_crashed",
                stderr=stderr,
                duration_s=time.perf_counter() - started,
            )
        return replace(parse_reply_text(out, source="the agent"), stderr=stderr,
                       duration_s=time.perf_counter() - started)  # fmt: skip

    def close(self) -> None:
        pass


class _LineProcess:
    def __init__(self, argv: list[str], cwd: str) -> None:
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    @staticmethod
    def _pump(stream, q: queue.Queue) -> None:
        for line in stream:
            q.put(line)
        q.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            del self.stderr[:-50]


def _is_answer_for(line: str, case_id: str) -> bool:
    """A JSON-lines agent's answer is a JSON object; when it echoes an `id`, that id must be this case's."""
    try:
        reply = json.loads(line)
    except ValueError:
        return False
    return isinstance(reply, dict) and str(reply.get("id", case_id)) == case_id


class PersistentCommandAgent:
    """`command:CMD` with `persistent: true`: one long-lived process, one JSON line in and one out per case."""

    def __init__(self, cmd: str, ctx: AgentContext) -> None:
        self.argv = shlex.split(cmd)
        self.ctx = ctx
        self.name = f"command:{cmd} (persistent)"
        self._local = threading.local()
        self._all: list[_LineProcess] = []
        self._lock = threading.Lock()

    def _process(self) -> _LineProcess:
        lp = getattr(self._local, "proc", None)
        if lp is None or lp.proc.poll() is not None:
            lp = _LineProcess(self.argv, self.ctx.base_dir)
            self._local.proc = lp
            with self._lock:
                self._all.append(lp)
        return lp

    def answer(self, case: Case) -> Answer:
        started = time.perf_counter()
        try:
            lp = self._process()
            assert lp.proc.stdin is not None
            lp.proc.stdin.write(json.dumps(request_for(case, self.ctx)) + "\n")
            lp.proc.stdin.flush()
        except (OSError, BrokenPipeError) as exc:
            self._local.proc = None
            return Answer(error=f"cannot talk to the agent process: {exc}", error_class="agent_crashed")
        deadline = time.monotonic() + self.ctx.timeout_s
        noise: list[str] = []
        while True:
            try:
                line = lp.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                _kill(lp.proc)  # a late answer must not be taken for the next case's
                self._local.proc = None
                if noise:
                    return parse_reply_text("".join(noise), source="the agent")
                return Answer(
                    error=f"the agent did not answer within {self.ctx.timeout_s:g}s",
                    error_class="agent_timeout",
                    duration_s=time.perf_counter() - started,
                )
            if line is None or _is_answer_for(line, case.id):
                break
            noise.append(line)  # log output on stdout, or a late answer to an earlier (timed-out) case
            deadline = min(deadline, time.monotonic() + _NOISE_GRACE_S)
        stderr = ("".join(noise) + "".join(lp.stderr))[-_STDERR_KEEP:] or None
        if line is None:
            self._local.proc = None
            return Answer(
                error=f"the agent process exited (code {lp.proc.wait()})",
                error_class="agent_crashed",
                stderr=stderr,
            )
        return replace(parse_reply_text(line, source="the agent"), stderr=stderr,
                       duration_s=time.perf_counter() - started)  # fmt: skip

    def close(self) -> None:
        for lp in self._all:
            if lp.proc.poll() is None:
                try:
                    assert lp.proc.stdin is not None
                    lp.proc.stdin.close()
                    lp.proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    _kill(lp.proc)


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
    """`python:MODULE_OR_FILE:FUNCTION`: FUNCTION(request: dict) returns SQL, `{"sql": ...}` or `{"error": ...}`."""

    def __init__(self, target: str, ctx: AgentContext) -> None:
        self.fn = load_callable(target, ctx.base_dir)
        self.ctx = ctx
        self.name = f"python:{target}"

    def answer(self, case: Case) -> Answer:
        box: dict[str, Any] = {}
        request = request_for(case, self.ctx)

        def call() -> None:
            try:
                box["reply"] = self.fn(request)
            except Exception as exc:  # noqa: BLE001 - the agent's own failure, recorded on the case
                box["error"] = f"{type(exc).__name__}: {exc}"
                box["trace"] = traceback.format_exc()[-_STDERR_KEEP:]

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
