"""Agents in other processes: `command:CMD`, a process per case or one long-lived JSON-lines process. Whatever
the process does (bytes that are not UTF-8, a flood, a closed stdout, a crash mid-line), its case is `errored`
with a reason; the run goes on. (`python:` agents live in pyagent.py and are re-exported here.)"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

from bot.agents.base import AgentContext, Answer, parse_reply_text, request_for, scrub_answer
from bot.agents.exchange import Exchange, exchange
from bot.agents.line_process import LineProcess
from bot.agents.pipes import (
    GRACE_S,
    POLL_S,
    STDERR_KEEP,
    STDOUT_CAP,
    exit_words,
    resolve_argv,
    size_words,
    start,
    text_tail,
)
from bot.agents.pyagent import PythonAgent, load_callable
from bot.cases.model import Case

__all__ = ["CommandAgent", "PersistentCommandAgent", "PythonAgent", "load_callable"]


def _timeout(ctx: AgentContext) -> Answer:
    return Answer(error=f"the agent did not answer within {ctx.timeout_s:g}s", error_class="agent_timeout")


def _cannot_start(argv: list[str], exc: OSError) -> Answer:
    return Answer(
        error=f"cannot start the agent command {argv[0]!r}: {exc.strerror}", error_class="agent_crashed"
    )


def _not_utf8(exc: UnicodeDecodeError, data: bytes, *, where: str) -> Answer:
    """Refused, not repaired: a replacement character inside SQL would change the query the agent meant."""
    near = data[max(0, exc.start - 20) : exc.start + 4]
    return Answer(
        error=f"the agent printed bytes that are not UTF-8 at offset {exc.start} of {where} (near {near!r})",
        error_class="agent_bad_output",
    )


def _too_big() -> Answer:
    return Answer(
        error=f"the agent's output is larger than {size_words(STDOUT_CAP)} (stopped it)",
        error_class="agent_bad_output",
    )


def _last_line(stderr: str) -> str:
    return (stderr.strip().splitlines()[-1:] or [""])[0][:300]


def _mid_line(data: bytes) -> str:
    """A reason's note when output stops without a newline (a crash while printing)."""
    if not data.strip() or data.endswith(b"\n"):
        return ""
    return f" in the middle of a line ({text_tail(data[-80:])!r})"


class CommandAgent:
    """`command:CMD`: CMD gets one JSON request on stdin and prints one JSON answer, once per case; with
    `ctx.env` as its whole environment when given, and `ctx.secrets` masked out of its answer."""

    def __init__(self, cmd: str, ctx: AgentContext) -> None:
        self.argv = resolve_argv(cmd, ctx.base_dir, env=ctx.env)
        self.cwd = str(Path(ctx.base_dir).absolute())
        self.ctx = ctx
        self.name = f"command:{cmd}"
        if ctx.sandbox is not None:
            ctx.sandbox.check_command(self.argv, ctx.base_dir, ctx.env)

    def answer(self, case: Case) -> Answer:
        return scrub_answer(self._answer(case), self.ctx.secrets)

    def _answer(self, case: Case) -> Answer:
        payload = json.dumps(request_for(case, self.ctx)).encode()
        started = time.perf_counter()
        try:
            proc = start(self.argv, self.cwd, env=self.ctx.env, sandbox=self.ctx.sandbox)
        except OSError as exc:
            return _cannot_start(self.argv, exc)
        done = exchange(proc, payload, timeout_s=self.ctx.timeout_s)
        return replace(
            self._judge(done), stderr=text_tail(done.stderr) or None, duration_s=time.perf_counter() - started
        )

    def _judge(self, done: Exchange) -> Answer:
        if done.ending == "timeout":
            return _timeout(self.ctx)
        if done.ending == "too_big":
            return _too_big()
        if done.returncode:
            tail = _last_line(text_tail(done.stderr))
            return Answer(
                error=f"the agent {exit_words(done.returncode)}{_mid_line(done.stdout)}"
                + (f": {tail}" if tail else ""),
                error_class="agent_crashed",
            )
        try:
            text = done.stdout.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _not_utf8(exc, done.stdout, where="its output")
        reply = parse_reply_text(text, source="the agent")
        if done.ending == "lingered" and reply.error_class == "agent_bad_output":
            printed = f"; {reply.error}" if done.stdout.strip() else ""
            return Answer(
                error=f"the agent closed its stdout without an answer but kept running (stopped it after "
                f"{GRACE_S:g}s){printed}",
                error_class="agent_crashed",
            )
        return reply  # an answer followed by a closed stdout counts, even if the process lingered

    def close(self) -> None:
        pass


def _is_answer_for(line: str, case_id: str) -> bool:
    """A JSON-lines agent's answer is a JSON object; when it echoes an `id`, that id must be this case's."""
    try:
        reply = json.loads(line)
    except ValueError:
        return False
    return isinstance(reply, dict) and str(reply.get("id", case_id)) == case_id


class PersistentCommandAgent:
    """`command:CMD` with `persistent: true`: one long-lived process, one JSON line in and one out per case
    (environment and masking as CommandAgent)."""

    def __init__(self, cmd: str, ctx: AgentContext) -> None:
        self.argv = resolve_argv(cmd, ctx.base_dir, env=ctx.env)
        self.cwd = str(Path(ctx.base_dir).absolute())
        self.ctx = ctx
        self.name = f"command:{cmd} (persistent)"
        self._local = threading.local()
        self._all: list[LineProcess] = []
        self._lock = threading.Lock()
        if ctx.sandbox is not None:
            ctx.sandbox.check_command(self.argv, ctx.base_dir, ctx.env)

    def _process(self) -> LineProcess:
        """This thread's process; a new one when the last died, was stopped, or never started."""
        lp = getattr(self._local, "proc", None)
        if lp is None or not lp.usable():
            if lp is not None:
                lp.stop()
            lp = LineProcess(self.argv, self.cwd, env=self.ctx.env, sandbox=self.ctx.sandbox)
            self._local.proc = lp
            with self._lock:
                self._all.append(lp)
        return lp

    def answer(self, case: Case) -> Answer:
        return scrub_answer(self._answer(case), self.ctx.secrets)

    def _answer(self, case: Case) -> Answer:
        started = time.perf_counter()
        try:
            lp = self._process()
        except OSError as exc:
            return _cannot_start(self.argv, exc)
        noise: list[str] = []
        sent = True
        try:
            sent = lp.send(
                (json.dumps(request_for(case, self.ctx)) + "\n").encode(), timeout_s=self.ctx.timeout_s
            )
            reply = self._await(lp, case.id, noise) if sent else _timeout(self.ctx)
        except OSError:  # it closed its stdin, or is gone: say how it ended
            reply = self._ended(lp, b"", alive="stopped reading its stdin but kept running (stopped it)")
        if not sent:
            lp.stop()
        stderr = ("".join(f"{line}\n" for line in noise) + lp.stderr_tail())[-STDERR_KEEP:] or None
        return replace(reply, stderr=stderr, duration_s=time.perf_counter() - started)

    def _await(self, lp: LineProcess, case_id: str, noise: list[str]) -> Answer:
        """Lines until this case's answer. Log lines and late answers to earlier cases are tolerated for a short
        grace; a dead process, a closed stdout or too much output ends the wait at once."""
        deadline = time.monotonic() + self.ctx.timeout_s
        size, bad_bytes = 0, None
        while True:
            now = time.monotonic()
            if lp.proc.poll() is not None:
                deadline = min(deadline, now + GRACE_S)  # its last lines are in the pipe already
            if now >= deadline:
                return self._no_answer(lp, noise, bad_bytes)
            try:
                event = lp.events.get(timeout=min(deadline - now, POLL_S))
            except queue.Empty:
                continue
            size += len(event.data) + 1
            if event.kind == "too_big" or size > lp.cap:
                lp.stop()
                return _too_big()
            if event.kind == "eof":
                return self._ended(lp, event.data, case_id=case_id)
            try:
                line = event.data.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad_bytes = bad_bytes or _not_utf8(exc, event.data, where="a line")
                deadline = min(deadline, now + GRACE_S)
                continue
            if not line.strip():
                continue
            if _is_answer_for(line, case_id):
                return parse_reply_text(line, source="the agent")
            noise.append(line)  # log output on stdout, or a late answer to an earlier (timed-out) case
            deadline = min(deadline, now + GRACE_S)

    def _ended(
        self,
        lp: LineProcess,
        partial: bytes,
        *,
        case_id: str | None = None,
        alive: str = "closed its stdout but kept running (stopped it)",
    ) -> Answer:
        """stdout closed: an answer without its final newline still counts; otherwise say how the process ended
        (its exit code, or that it kept running) and what it said last on stderr. It is never reused."""
        code = lp.wait_exit(GRACE_S)
        lp.stop()
        try:
            last = partial.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _not_utf8(exc, partial, where="its last line")
        if case_id is not None and last.strip() and _is_answer_for(last, case_id):
            return parse_reply_text(last, source="the agent")
        how = f"process {exit_words(code)}" if code is not None else alive
        tail = _last_line(lp.stderr_tail(settle_s=GRACE_S))
        return Answer(
            error=f"the agent {how}{_mid_line(partial)}" + (f": {tail}" if tail else ""),
            error_class="agent_crashed",
        )

    def _no_answer(self, lp: LineProcess, noise: list[str], bad_bytes: Answer | None) -> Answer:
        code = lp.proc.poll()
        lp.stop()  # a late answer must not be taken for the next case's
        if code is not None:  # it exited, but something it started holds stdout open
            return self._ended(lp, b"")
        if bad_bytes is not None:
            return bad_bytes
        if noise:
            return parse_reply_text("\n".join(noise), source="the agent")
        return _timeout(self.ctx)

    def close(self) -> None:
        for lp in self._all:
            if lp.usable():
                try:
                    assert lp.proc.stdin is not None
                    lp.proc.stdin.close()
                    lp.proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            lp.stop()
