"""The client's transport: one logical call to an OpenAI-compatible endpoint, with our own retries (429, 5xx,
timeouts; Retry-After honoured within a cap), the response format stepped down on a 400 and remembered, the
longer timeout before the first reply, and at most `max_concurrency` requests in flight. Every request is
reserved against the budget and counted; failures leave as LLMUnavailable or LLMContextTooLong."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import openai

from bot.config.llm import LLMSettings
from bot.llm.budget import Budget, estimate_tokens
from bot.llm.errors import LLMContextTooLong, LLMUnavailable
from bot.llm.failures import context_overflow, overflow_message, retry_after_s, timeout_hint
from bot.llm.types import Sampling, Usage

log = logging.getLogger("sqlcanary.llm")

FORMATS = ("json_schema", "json_object", "none")  # what to ask for, best first; a 400 steps down
_RETRYABLE = (
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APITimeoutError,
    openai.APIConnectionError,
)


@dataclass(frozen=True)
class Call:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    requests: int = 1  # requests sent for this call (retries and format step-downs included)


class _Rejected(Exception):
    """An HTTP 4xx that retrying cannot fix; a 400 with a response_format may be the format's fault."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


class _TimedOut(Exception):
    def __init__(self, exc: Exception, seconds: float, cold: bool) -> None:
        self.exc, self.seconds, self.cold = exc, seconds, cold


class Transport:
    """Sends one LLMClient's requests; thread-safe. `count` adds each request and its tokens to the client's
    usage; `redact` masks the API key out of every message."""

    def __init__(
        self,
        settings: LLMSettings,
        endpoint: openai.OpenAI,
        *,
        budget: Budget,
        count: Callable[[Usage], None],
        redact: Callable[[str], str],
        sleep: Callable[[float], None],
        jitter: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.budget = budget
        self._openai = endpoint
        self._count, self._redact = count, redact
        self._sleep, self._jitter = sleep, jitter
        self._lock = threading.Lock()
        self.format = 0  # index into FORMATS: the best response format the endpoint has not rejected
        self._warm = False  # a reply came back: the server has read (and cached) a prompt once
        n = settings.concurrency
        self._slots = threading.BoundedSemaphore(n) if n else None

    def _format_arg(self, schema: dict | None, level: int) -> dict | None:
        if schema is None or FORMATS[level] == "none":
            return None
        if FORMATS[level] == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": False}}

    def send(
        self,
        messages: list[dict],
        *,
        schema: dict | None,
        purpose: str,
        sampling: Sampling,
    ) -> Call:
        """One logical call: retries on 429/5xx/timeouts; on a 400 tries the next response format, and keeps
        using the one that worked. Errors count every request this call sent."""
        failures = sent = 0
        level = self.format
        while True:
            sent += 1
            try:
                call = self._request(
                    messages, self._format_arg(schema, level), purpose=purpose, sampling=sampling
                )
            except _Rejected as rej:
                status = getattr(rej.exc, "status_code", None)
                if status == 400 and schema is not None and level < len(FORMATS) - 1:
                    log.info(
                        "the endpoint rejected response_format=%s: trying %s",
                        FORMATS[level],
                        FORMATS[level + 1],
                    )
                    level += 1
                    continue
                raise LLMUnavailable(self._unavailable(rej.exc, sent, purpose)) from None
            except _TimedOut as t:
                failures += 1
                if failures > self.settings.max_retries:
                    raise LLMUnavailable(
                        self._unavailable(t.exc, sent, purpose, hint=timeout_hint(t.seconds, cold=t.cold))
                    ) from None
                self._sleep(self._delay(t.exc, failures))
                continue
            except _RETRYABLE as exc:
                failures += 1
                if failures > self.settings.max_retries:
                    raise LLMUnavailable(self._unavailable(exc, sent, purpose)) from None
                self._sleep(self._delay(exc, failures))
                continue
            with self._lock:
                self.format = max(self.format, level)
            return replace(call, requests=sent)

    def _delay(self, exc: Exception, failures: int) -> float:
        s = self.settings
        asked = retry_after_s(exc)
        own = s.backoff_s * (2 ** (failures - 1)) * (0.5 + self._jitter())
        return min(s.max_backoff_s, asked if asked is not None else own)

    def _unavailable(self, exc: Exception, attempts: int, purpose: str, *, hint: str = "") -> str:
        what = f" for {purpose}" if purpose else ""
        where = self.settings.base_url or "the OpenAI API"
        status = getattr(exc, "status_code", None)
        reason = f"HTTP {status}" if status else type(exc).__name__
        detail = hint or str(exc)[:300]
        return self._redact(
            f"the LLM at {where} (model {self.settings.model}) failed{what} after {attempts} attempt(s): "
            f"{reason}: {detail}"
        )

    def _slot(self) -> AbstractContextManager[Any]:
        return self._slots if self._slots is not None else nullcontext()

    def _request(
        self,
        messages: list[dict],
        response_format: dict | None,
        *,
        purpose: str,
        sampling: Sampling,
    ) -> Call:
        s = self.settings
        prompt = json.dumps(messages, ensure_ascii=False)
        self.budget.reserve(
            expected_tokens=estimate_tokens(prompt) + (sampling.max_tokens or 0), purpose=purpose
        )
        self._count(Usage(calls=1))
        kwargs: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": sampling.temperature}
        if sampling.max_tokens:
            kwargs["max_tokens"] = sampling.max_tokens
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        if response_format is not None:
            kwargs["response_format"] = response_format
        with self._slot():  # waiting for a slot is not part of the request's time
            cold = not self._warm
            timeout = s.cold_timeout_s if cold else s.request_timeout_s
            try:
                response = self._openai.chat.completions.create(**kwargs, timeout=timeout)
            except openai.BadRequestError as exc:
                overflow = context_overflow(exc)
                if overflow is not None:
                    raise LLMContextTooLong(
                        self._redact(
                            overflow_message(
                                overflow,
                                where=s.base_url or "the OpenAI API",
                                model=s.model,
                                purpose=purpose,
                                estimate=estimate_tokens(prompt),
                            )
                        ),
                        limit=overflow.limit,
                        prompt_tokens=overflow.prompt_tokens,
                    ) from None
                raise _Rejected(exc) from None
            except openai.APITimeoutError as exc:
                raise _TimedOut(exc, timeout, cold) from None
            except _RETRYABLE:
                raise
            except openai.APIStatusError as exc:  # 401, 403, 404, other 4xx: retrying will not help
                raise _Rejected(exc) from None
            except (ValueError, TypeError) as exc:  # a body that is not a chat completion
                raise LLMUnavailable(
                    self._redact(f"the LLM endpoint sent a malformed response: {exc}"[:400])
                ) from None
        call = self._read(response, prompt)
        self._warm = True
        return call

    def _read(self, response: Any, prompt: str) -> Call:
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMUnavailable(self._redact(f"the LLM endpoint sent no choices: {str(response)[:200]!r}"))
        text = choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        p = getattr(usage, "prompt_tokens", None) or estimate_tokens(prompt)
        c = getattr(usage, "completion_tokens", None) or estimate_tokens(text)
        self.budget.record(p + c)
        self._count(Usage(prompt_tokens=p, completion_tokens=c))
        return Call(text, p, c, getattr(choices[0], "finish_reason", None))
