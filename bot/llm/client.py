"""One client over the `openai` package for any OpenAI-compatible endpoint, with our own retries, strict JSON,
a reply cache, budgets and usage. The openai client's own retries are off (max_retries=0): ours count against
the budget and honour Retry-After within a cap.

Slow local servers: requests sent before the first reply get `first_timeout_s` (a cold llama.cpp reads the whole
prompt first), later ones `timeout_s`; at most `max_concurrency` requests are in flight (1 for a local base_url),
so `--jobs` workers queue here, where no timeout runs, instead of in the server's one slot. A prompt longer
than the model's context is LLMContextTooLong, never a reason to drop the JSON response format."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import openai

from bot.llm.budget import Budget, estimate_tokens
from bot.llm.cache import CachedReply, ReplyCache, request_key
from bot.llm.errors import BudgetExhausted, LLMBadOutput, LLMContextTooLong, LLMUnavailable, redact
from bot.llm.failures import context_overflow, overflow_message, retry_after_s, timeout_hint
from bot.llm.jsonparse import JsonParseError, Parsed, parse_json_object, validate
from bot.llm.pricing import estimate_cost
from bot.llm.types import JsonReply, ParseStats, TextReply, Usage
from bot.llmconfig import LLMSettings

log = logging.getLogger("sqlcanary.llm")

FORMATS = ("json_schema", "json_object", "none")  # what to ask for, best first; a 400 steps down
_RETRYABLE = (
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APITimeoutError,
    openai.APIConnectionError,
)
_NO_KEY = "sqlcanary-no-key"  # local servers (Ollama, vLLM) take any key; the openai package needs one
REASK = (
    "Your previous reply could not be used: {error}. Reply again with only one JSON object{fields}, "
    "no prose and no code fences."
)


@dataclass(frozen=True)
class _Call:
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


class LLMClient:
    """Thread-safe; one per run (the budget and usage are per client unless a Budget is shared)."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        environ: Mapping[str, str],
        cache: ReplyCache | None = None,
        budget: Budget | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        env = environ  # the process environment as `main` read it (Settings.environ): the key is looked up here
        self.settings = settings.with_env(env)
        self.__key = env.get(self.settings.api_key_env) or None
        if self.__key is None and self.settings.base_url is None:
            raise LLMUnavailable(
                f"no API key: set the environment variable {self.settings.api_key_env} "
                "(or set llm.base_url to a local OpenAI-compatible server)"
            )
        self.cache = (cache or ReplyCache()) if self.settings.cache else None
        self.budget = budget or Budget(max_calls=self.settings.budget.max_calls,
                                       max_tokens=self.settings.budget.max_tokens)  # fmt: skip
        self._sleep, self._jitter = sleep, jitter
        self._lock = threading.Lock()
        self._format = 0
        self._warm = False  # a reply came back: the server has read (and cached) a prompt once
        n = self.settings.concurrency
        self._slots = threading.BoundedSemaphore(n) if n else None
        self._totals = Usage()
        self._stats = ParseStats()
        self._openai = self._make_openai()

    def _make_openai(self) -> openai.OpenAI:
        key = self.__key or _NO_KEY
        kwargs: dict[str, Any] = {"api_key": key, "base_url": self.settings.base_url, "max_retries": 0,
                                  "timeout": self.settings.request_timeout_s}  # fmt: skip
        if self.settings.api_version:  # Azure's OpenAI-compatible endpoint
            kwargs["default_query"] = {"api-version": self.settings.api_version}
            kwargs["default_headers"] = {"api-key": key}
        return openai.OpenAI(**kwargs)

    def __repr__(self) -> str:
        key = "set" if self.__key else "unset"
        return (
            f"LLMClient(base_url={self.settings.base_url!r}, model={self.settings.model!r}, api_key=<{key}>)"
        )

    def redact(self, text: str) -> str:
        return redact(text, [self.__key])

    # ---- what callers read -------------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        with self._lock:
            t = self._totals
        cost = estimate_cost(self.settings.prices, self.settings.model, prompt_tokens=t.prompt_tokens,
                             completion_tokens=t.completion_tokens)  # fmt: skip
        return Usage(t.prompt_tokens, t.completion_tokens, t.calls, t.cached_calls, cost)

    @property
    def parse_stats(self) -> ParseStats:
        with self._lock:
            return self._stats

    @property
    def response_format(self) -> str:
        """What this client currently asks for (steps down when the server rejects it)."""
        return FORMATS[self._format]

    # ---- calls ---------------------------------------------------------------------------------------------
    def complete_text(self, messages: list[dict], *, purpose: str = "", attempt: int | None = None) -> TextReply:
        """`attempt`: which of K repeats this is; at a temperature above 0 each gets its own cached reply."""
        key = self._key(messages, schema=None, kind="text", attempt=attempt)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None:
            self._add(Usage(cached_calls=1))
            return TextReply(hit.text, Usage(cached_calls=1, cost_usd=0.0), cached=True)
        call = self._send(messages, schema=None, purpose=purpose)
        if self.cache:
            self.cache.put(key, CachedReply(call.text, call.prompt_tokens, call.completion_tokens))
        return TextReply(call.text, self._usage_of([call]), cached=False)

    def complete_json(
        self,
        messages: list[dict],
        *,
        schema: dict,
        required: tuple[str, ...] = (),
        purpose: str = "",
        attempt: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> JsonReply:
        """`temperature`, `max_tokens`: this call's own, instead of the settings' (max_tokens never above them)."""
        sampling = self._sampling(temperature, max_tokens)
        key = self._key(messages, schema=schema, kind="json", attempt=attempt, sampling=sampling)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None:
            try:
                parsed = self._check(parse_json_object(hit.text), schema, required)
            except JsonParseError:
                pass  # a cached reply that no longer satisfies the schema: ask again
            else:
                self._add(Usage(cached_calls=1))
                return JsonReply(parsed.data, hit.text, Usage(cached_calls=1, cost_usd=0.0), cached=True,
                                 parse_repaired=parsed.repaired)  # fmt: skip
        calls = [self._send(messages, schema=schema, purpose=purpose, sampling=sampling)]
        try:
            parsed = self._parse(calls[0], schema, required)
        except JsonParseError as exc:
            log.info(
                "LLM reply%s not usable (%s): asking once more", f" for {purpose}" if purpose else "", exc
            )
            calls.append(self._send(self._reask(messages, calls[0], exc, schema, required), schema=schema,
                                    purpose=purpose, sampling=sampling))  # fmt: skip
            try:
                parsed = self._parse(calls[1], schema, required)
            except JsonParseError as exc2:
                what = f" for {purpose}" if purpose else ""
                raise LLMBadOutput(self.redact(
                    f"the model's reply{what} is not usable JSON after one re-ask: {exc2}; "
                    f"it began {calls[1].text[:200]!r}"
                )) from None  # fmt: skip
        final = calls[-1]
        if self.cache:
            self.cache.put(key, CachedReply(final.text, final.prompt_tokens, final.completion_tokens))
        return JsonReply(parsed.data, final.text, self._usage_of(calls), cached=False,
                         parse_repaired=parsed.repaired or len(calls) > 1)  # fmt: skip

    # ---- parsing -------------------------------------------------------------------------------------------
    @staticmethod
    def _check(parsed: Parsed, schema: dict | None, required: tuple[str, ...]) -> Parsed:
        problems = validate(parsed.data, schema=schema, required=required)
        if problems:
            raise JsonParseError("; ".join(problems))
        return parsed

    def _parse(self, call: _Call, schema: dict, required: tuple[str, ...]) -> Parsed:
        try:
            parsed = self._check(parse_json_object(call.text), schema, required)
        except JsonParseError as exc:
            with self._lock:
                s = self._stats
                self._stats = ParseStats(s.ok, s.repaired, s.failed + 1)
            if call.finish_reason == "length":
                raise JsonParseError(f"{exc} (the reply was cut off at max_tokens)") from None
            raise
        with self._lock:
            s = self._stats
            self._stats = ParseStats(s.ok + (not parsed.repaired), s.repaired + parsed.repaired, s.failed)
        return parsed

    def _reask(
        self, messages: list[dict], call: _Call, error: Exception, schema: dict, required: tuple[str, ...]
    ):
        names = list(required) + [r for r in schema.get("required", ()) if r not in required]
        fields = f" with the fields {', '.join(names)}" if names else ""
        return [
            *messages,
            {"role": "assistant", "content": self.redact(call.text[:4000])},
            {"role": "user", "content": self.redact(REASK.format(error=error, fields=fields))},
        ]

    # ---- transport -----------------------------------------------------------------------------------------
    def _sampling(self, temperature: float | None, max_tokens: int | None) -> tuple[float, int | None]:
        s = self.settings
        room = s.max_tokens if max_tokens is None else min(max_tokens, s.max_tokens or max_tokens)
        return (s.temperature if temperature is None else temperature), room

    def _key(
        self,
        messages: list[dict],
        *,
        schema: dict | None,
        kind: str,
        attempt: int | None,
        sampling: tuple[float, int | None] | None = None,
    ) -> str:
        s = self.settings
        temperature, max_tokens = sampling or (s.temperature, s.max_tokens)
        sampled = attempt if temperature > 0 else None  # at temperature 0 every attempt gets the same reply
        return request_key(base_url=s.base_url, model=s.model, messages=messages, schema=schema,
                           temperature=temperature, max_tokens=max_tokens, kind=kind,
                           attempt=sampled)  # fmt: skip

    def _add(self, usage: Usage) -> None:
        with self._lock:
            self._totals = self._totals + Usage(
                usage.prompt_tokens, usage.completion_tokens, usage.calls, usage.cached_calls, 0.0
            )

    def _usage_of(self, calls: list[_Call]) -> Usage:
        p = sum(c.prompt_tokens for c in calls)
        c = sum(c.completion_tokens for c in calls)
        cost = estimate_cost(self.settings.prices, self.settings.model, prompt_tokens=p, completion_tokens=c)
        return Usage(p, c, sum(x.requests for x in calls), 0, cost)

    def _format_arg(self, schema: dict | None, level: int) -> dict | None:
        if schema is None or FORMATS[level] == "none":
            return None
        if FORMATS[level] == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": False}}

    def _send(
        self,
        messages: list[dict],
        *,
        schema: dict | None,
        purpose: str,
        sampling: tuple[float, int | None] | None = None,
    ) -> _Call:
        """One logical call: retries on 429/5xx/timeouts; on a 400 tries the next response format, and keeps
        using the one that worked. Errors count every request this call sent."""
        failures = sent = 0
        level = self._format
        while True:
            sent += 1
            try:
                call = self._request(messages, self._format_arg(schema, level), purpose=purpose, sampling=sampling)
            except _Rejected as rej:
                status = getattr(rej.exc, "status_code", None)
                if status == 400 and schema is not None and level < len(FORMATS) - 1:
                    log.info("the endpoint rejected response_format=%s: trying %s", FORMATS[level],
                             FORMATS[level + 1])  # fmt: skip
                    level += 1
                    continue
                raise LLMUnavailable(self._unavailable(rej.exc, sent, purpose)) from None
            except _TimedOut as t:
                failures += 1
                if failures > self.settings.max_retries:
                    raise LLMUnavailable(self._unavailable(t.exc, sent, purpose, hint=timeout_hint(
                        t.seconds, cold=t.cold))) from None  # fmt: skip
                self._sleep(self._delay(t.exc, failures))
                continue
            except _RETRYABLE as exc:
                failures += 1
                if failures > self.settings.max_retries:
                    raise LLMUnavailable(self._unavailable(exc, sent, purpose)) from None
                self._sleep(self._delay(exc, failures))
                continue
            with self._lock:
                self._format = max(self._format, level)
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
        return self.redact(
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
        sampling: tuple[float, int | None] | None = None,
    ) -> _Call:
        s = self.settings
        temperature, max_tokens = sampling or (s.temperature, s.max_tokens)
        prompt = json.dumps(messages, ensure_ascii=False)
        self.budget.reserve(expected_tokens=estimate_tokens(prompt) + (max_tokens or 0), purpose=purpose)
        self._add(Usage(calls=1))
        kwargs: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": temperature}
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
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
                    raise LLMContextTooLong(self.redact(overflow_message(
                        overflow, where=s.base_url or "the OpenAI API", model=s.model, purpose=purpose,
                        estimate=estimate_tokens(prompt))), limit=overflow.limit,
                        prompt_tokens=overflow.prompt_tokens) from None  # fmt: skip
                raise _Rejected(exc) from None
            except openai.APITimeoutError as exc:
                raise _TimedOut(exc, timeout, cold) from None
            except _RETRYABLE:
                raise
            except openai.APIStatusError as exc:  # 401, 403, 404, other 4xx: retrying will not help
                raise _Rejected(exc) from None
            except (ValueError, TypeError) as exc:  # a body that is not a chat completion
                raise LLMUnavailable(
                    self.redact(f"the LLM endpoint sent a malformed response: {exc}"[:400])
                ) from None
        call = self._read(response, prompt)
        self._warm = True
        return call

    def _read(self, response: Any, prompt: str) -> _Call:
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMUnavailable(self.redact(f"the LLM endpoint sent no choices: {str(response)[:200]!r}"))
        text = choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        p = getattr(usage, "prompt_tokens", None) or estimate_tokens(prompt)
        c = getattr(usage, "completion_tokens", None) or estimate_tokens(text)
        self.budget.record(p + c)
        self._add(Usage(prompt_tokens=p, completion_tokens=c))
        return _Call(text, p, c, getattr(choices[0], "finish_reason", None))


__all__ = ["LLMClient", "BudgetExhausted", "retry_after_s"]
