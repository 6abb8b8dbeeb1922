"""The agent protocol: one call per case, every failure recorded on the case (never raised)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic import ValidationError

from bot.agents.sandbox import Sandbox
from bot.base.secrets import scrub, scrub_optional
from bot.base.settings import Settings
from bot.base.usage import AnswerUsage
from bot.cases.model import Case, Suite


@dataclass(frozen=True)
class Answer:
    sql: str | None = None
    error: str | None = None
    error_class: str | None = None
    stderr: str | None = None
    used: tuple[str, ...] = ()
    # For self-tests (`gold:all`): every alternative is an answer of its own; the case passes only if all do.
    alternatives: tuple[str, ...] = ()
    duration_s: float = 0.0
    usage: AnswerUsage | None = None  # what the agent says the answer cost (its reply's `usage`)
    cached: bool = False  # taken from the answer cache, not asked in this run


@dataclass(frozen=True)
class AgentContext:
    """What an adapter may need besides the case: where relative paths start, and free-form options.

    `env`: when set, a process agent (`command:`) runs with exactly this environment (build it with
    bot.agents.env.agent_environment); None gives it PATH=os.defpath only, never sqlcanary's own environment
    (bot.base.childenv). `secrets`: values masked out of
    everything an answer carries (error, stderr, SQL, `used`), so an agent that prints a token it found cannot
    put it into a report. Neither is ever printed (repr=False)."""

    base_dir: str = "."
    options: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 120.0
    env: Mapping[str, str] | None = field(default=None, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    # The process's settings: the built-in `llm` agent looks its key up there by the name the config gives, and
    # keeps its reply cache in the cache folder. None: the process environment and the default cache folder.
    settings: Settings | None = field(default=None, repr=False)
    # When sqlcanary runs as root: the unprivileged user every process of the agent runs as (a `python:` agent
    # then runs in a host process of its own, bot.agents.pyboxed). None: as today, in sqlcanary's own user.
    sandbox: Sandbox | None = field(default=None, repr=False)
    # The suite the run evaluates, as it was read (in a check's head, by its reader): the built-in `llm` agent
    # describes a case's database from its fixtures, never by reading the suite's files again.
    suite: Suite | None = field(default=None, repr=False)


class AgentAdapter(Protocol):
    name: str

    def answer(self, case: Case) -> Answer: ...

    def close(self) -> None: ...


# The attempt (0-based) the runner is asking for, sent as `attempt` in the request: with `--repeat K` an agent
# may vary its answer per attempt (a scripted flaky agent does). Unset outside a run.
current_attempt: ContextVar[int | None] = ContextVar("sqlcanary_attempt", default=None)


def scrub_answer(answer: Answer, secrets: Sequence[str]) -> Answer:
    """The answer with every secret masked: the agent boundary, before anything is stored or shown."""
    if not secrets:
        return answer
    return replace(
        answer,
        sql=scrub_optional(answer.sql, secrets),
        error=scrub_optional(answer.error, secrets),
        stderr=scrub_optional(answer.stderr, secrets),
        used=tuple(scrub(u, secrets) for u in answer.used),
        usage=answer.usage.model_copy(update={"model": scrub_optional(answer.usage.model, secrets)})
        if answer.usage
        else None,
    )


def request_for(case: Case, ctx: AgentContext) -> dict[str, Any]:
    request = {**case.agent_payload(), "options": ctx.options}
    attempt = current_attempt.get()
    if attempt is not None:
        request["attempt"] = attempt
    return request


def answer_from_reply(reply: Any, *, source: str) -> Answer:
    """Interpret what an agent returned: a SQL string, `{"sql": ...}` or `{"error": ...}`."""
    if isinstance(reply, str):
        return (
            Answer(sql=reply)
            if reply.strip()
            else Answer(error=f"{source} returned empty SQL", error_class="agent_empty")
        )
    if not isinstance(reply, dict):
        return Answer(
            error=f"{source} returned {type(reply).__name__}, expected an object with `sql` or `error`",
            error_class="agent_bad_output",
        )
    used = reply.get("used") or ()
    used = tuple(str(u) for u in used) if isinstance(used, list | tuple) else ()
    try:
        usage = reply_usage(reply.get("usage"))
    except ValueError as exc:
        return Answer(
            error=f"{source} returned a `usage` that is not valid: {exc}", error_class="agent_bad_output"
        )
    if reply.get("error"):
        return Answer(
            error=f"{source}: {reply['error']}", error_class="agent_declined", used=used, usage=usage
        )
    sql = reply.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        keys = ", ".join(sorted(map(str, reply))) or "none"
        return Answer(
            error=f"{source} returned no `sql` (keys: {keys})", error_class="agent_bad_output", used=used
        )
    return Answer(sql=sql, used=used, usage=usage)


def reply_usage(raw: Any) -> AnswerUsage | None:
    """A reply's `usage` (bot.base.usage.AnswerUsage: model, llm_calls, prompt_tokens, completion_tokens,
    cost_usd; each optional and bounded): None when absent, ValueError naming the field when not valid."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {type(raw).__name__}")
    try:
        return AnswerUsage.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "usage"
        raise ValueError(f"{where}: {first['msg']}") from None


def parse_reply_text(text: str, *, source: str) -> Answer:
    """An agent's stdout: one JSON object (the last JSON line wins if it also printed other lines)."""
    stripped = text.strip()
    if not stripped:
        return Answer(error=f"{source} printed nothing", error_class="agent_bad_output")
    candidates = [stripped, *reversed([ln for ln in stripped.splitlines() if ln.strip()])]
    for cand in candidates:
        try:
            return answer_from_reply(json.loads(cand), source=source)
        except json.JSONDecodeError:
            continue
    return Answer(
        error=f"{source} printed output that is not JSON: {stripped[:200]!r}", error_class="agent_bad_output"
    )
