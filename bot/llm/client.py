"""One client over the `openai` package for any OpenAI-compatible endpoint, with our own retries, strict JSON,
a reply cache, budgets and usage. The openai client's own retries are off (max_retries=0): ours count against
the budget and honour Retry-After within a cap.

Slow local servers: requests sent before the first reply get `first_timeout_s` (a cold llama.cpp reads the whole
prompt first), later ones `timeout_s`; at most `max_concurrency` requests are in flight (1 for a local base_url),
so `--jobs` workers queue here, where no timeout runs, instead of in the server's one slot. A prompt longer
than the model's context is LLMContextTooLong, never a reason to drop the JSON response format.

Sending (retries, timeouts, concurrency slots, response-format step-down) is `bot.llm.transport.Transport`,
which the client holds; the client keeps the cache, parsing and re-asking, and the usage totals."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import openai

from bot.config.llm import LLMSettings, replay_file
from bot.llm.budget import Budget
from bot.llm.cache import CachedReply, ReplyCache, request_key
from bot.llm.errors import BudgetExhausted, LLMBadOutput, LLMUnavailable, redact
from bot.llm.failures import retry_after_s
from bot.llm.jsonparse import JsonParseError, Parsed, parse_json_object, validate
from bot.llm.pricing import estimate_cost
from bot.llm.replay_server import replay_base_url
from bot.llm.transport import FORMATS, Call, Transport
from bot.llm.types import JsonReply, ParseStats, Sampling, TextReply, Usage

log = logging.getLogger("sqlcanary.llm")

_NO_KEY = "sqlcanary-no-key"  # local servers (Ollama, vLLM) take any key; the openai package needs one
REASK = (
    "Your previous reply could not be used: {error}. Reply again with only one JSON object{fields}, "
    "no prose and no code fences."
)


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
        env = (
            environ  # the process environment as `main` read it (Settings.environ): the key is looked up here
        )
        self.settings = settings.with_env(env)
        if replay_file(self.settings.base_url) is not None:  # scripted replies: a cache would hide file edits
            self.settings = self.settings.model_copy(update={"cache": False})
        self.__key = env.get(self.settings.api_key_env) or None
        if self.__key is None and self.settings.base_url is None:
            raise LLMUnavailable(
                f"no API key: set the environment variable {self.settings.api_key_env} "
                "(or set llm.base_url to a local OpenAI-compatible server)"
            )
        self.cache = (cache or ReplyCache()) if self.settings.cache else None
        self.budget = budget or Budget(
            max_calls=self.settings.budget.max_calls, max_tokens=self.settings.budget.max_tokens
        )
        self._lock = threading.Lock()
        self._totals = Usage()
        self._stats = ParseStats()
        self._transport = Transport(
            self.settings,
            self._make_openai(),
            budget=self.budget,
            count=self._add,
            redact=self.redact,
            sleep=sleep,
            jitter=jitter,
        )

    def _make_openai(self) -> openai.OpenAI:
        key = self.__key or _NO_KEY
        kwargs: dict[str, Any] = {
            "api_key": key,
            "base_url": replay_base_url(self.settings.base_url),
            "max_retries": 0,
            "timeout": self.settings.request_timeout_s,
        }
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
        cost = estimate_cost(
            self.settings.prices,
            self.settings.model,
            prompt_tokens=t.prompt_tokens,
            completion_tokens=t.completion_tokens,
        )
        return Usage(t.prompt_tokens, t.completion_tokens, t.calls, t.cached_calls, cost)

    @property
    def parse_stats(self) -> ParseStats:
        with self._lock:
            return self._stats

    @property
    def response_format(self) -> str:
        """What this client currently asks for (steps down when the server rejects it)."""
        return FORMATS[self._transport.format]

    # ---- calls ---------------------------------------------------------------------------------------------
    def complete_text(
        self, messages: list[dict], *, purpose: str = "", attempt: int | None = None
    ) -> TextReply:
        """`attempt`: which of K repeats this is; at a temperature above 0 each gets its own cached reply."""
        sampling = self._sampling(None, None, attempt)
        key = self._key(messages, schema=None, kind="text", sampling=sampling)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None:
            self._add(Usage(cached_calls=1))
            return TextReply(hit.text, Usage(cached_calls=1, cost_usd=0.0), cached=True)
        call = self._transport.send(messages, schema=None, purpose=purpose, sampling=sampling)
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
        sampling = self._sampling(temperature, max_tokens, attempt)
        key = self._key(messages, schema=schema, kind="json", sampling=sampling)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None:
            try:
                parsed = self._check(parse_json_object(hit.text), schema, required)
            except JsonParseError:
                pass  # a cached reply that no longer satisfies the schema: ask again
            else:
                self._add(Usage(cached_calls=1))
                # This reply's usage: what it cost when it was asked (no request now), so that an answer from
                # the cache says what producing it costs; the client's totals count it as a cached call only.
                return JsonReply(
                    parsed.data,
                    hit.text,
                    self._cached_usage(hit.prompt_tokens, hit.completion_tokens),
                    cached=True,
                    parse_repaired=parsed.repaired,
                )
        calls = [self._transport.send(messages, schema=schema, purpose=purpose, sampling=sampling)]
        try:
            parsed = self._parse(calls[0], schema, required)
        except JsonParseError as exc:
            log.info(
                "LLM reply%s not usable (%s): asking once more", f" for {purpose}" if purpose else "", exc
            )
            calls.append(
                self._transport.send(
                    self._reask(messages, calls[0], exc, schema, required),
                    schema=schema,
                    purpose=purpose,
                    sampling=sampling,
                )
            )
            try:
                parsed = self._parse(calls[1], schema, required)
            except JsonParseError as exc2:
                what = f" for {purpose}" if purpose else ""
                raise LLMBadOutput(
                    self.redact(
                        f"the model's reply{what} is not usable JSON after one re-ask: {exc2}; "
                        f"it began {calls[1].text[:200]!r}"
                    )
                ) from None
        final = calls[-1]
        if self.cache:
            self.cache.put(key, CachedReply(final.text, final.prompt_tokens, final.completion_tokens))
        return JsonReply(
            parsed.data,
            final.text,
            self._usage_of(calls),
            cached=False,
            parse_repaired=parsed.repaired or len(calls) > 1,
        )

    # ---- parsing -------------------------------------------------------------------------------------------
    @staticmethod
    def _check(parsed: Parsed, schema: dict | None, required: tuple[str, ...]) -> Parsed:
        problems = validate(parsed.data, schema=schema, required=required)
        if problems:
            raise JsonParseError("; ".join(problems))
        return parsed

    def _parse(self, call: Call, schema: dict, required: tuple[str, ...]) -> Parsed:
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
        self, messages: list[dict], call: Call, error: Exception, schema: dict, required: tuple[str, ...]
    ):
        names = list(required) + [r for r in schema.get("required", ()) if r not in required]
        fields = f" with the fields {', '.join(names)}" if names else ""
        return [
            *messages,
            {"role": "assistant", "content": self.redact(call.text[:4000])},
            {"role": "user", "content": self.redact(REASK.format(error=error, fields=fields))},
        ]

    # ---- cache keys and usage ----------------------------------------------------------------------------------
    def _sampling(self, temperature: float | None, max_tokens: int | None, attempt: int | None) -> Sampling:
        """The call's own temperature and reply cap over the settings' (the cap never above theirs); above
        temperature 0 the attempt is the seed. At 0 every attempt gets the same reply: no seed."""
        s = self.settings
        room = s.max_tokens if max_tokens is None else min(max_tokens, s.max_tokens or max_tokens)
        temperature = s.temperature if temperature is None else temperature
        seed = (attempt or 0) if temperature > 0 else None
        return Sampling(temperature=temperature, max_tokens=room, seed=seed)

    def _key(self, messages: list[dict], *, schema: dict | None, kind: str, sampling: Sampling) -> str:
        s = self.settings
        return request_key(
            base_url=s.base_url,
            model=s.model,
            messages=messages,
            schema=schema,
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            kind=kind,
            attempt=sampling.seed,
        )

    def _add(self, usage: Usage) -> None:
        with self._lock:
            self._totals = self._totals + Usage(
                usage.prompt_tokens, usage.completion_tokens, usage.calls, usage.cached_calls, 0.0
            )

    def _cached_usage(self, prompt: int, completion: int) -> Usage:
        cost = estimate_cost(
            self.settings.prices, self.settings.model, prompt_tokens=prompt, completion_tokens=completion
        )
        return Usage(prompt, completion, 0, 1, cost)

    def _usage_of(self, calls: list[Call]) -> Usage:
        p = sum(c.prompt_tokens for c in calls)
        c = sum(c.completion_tokens for c in calls)
        cost = estimate_cost(self.settings.prices, self.settings.model, prompt_tokens=p, completion_tokens=c)
        return Usage(p, c, sum(x.requests for x in calls), 0, cost)


__all__ = ["LLMClient", "BudgetExhausted", "retry_after_s"]
