"""What went wrong with a request, in words that name the setting to change: a timeout names `llm.timeout_s`
(or `llm.first_timeout_s`), a prompt longer than the model's context says how long each was, a server's
Retry-After is honoured. Kept apart from the client so the wording can be tested without a server."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# How servers say "the prompt does not fit": OpenAI (code context_length_exceeded, "maximum context length is
# N tokens"), llama.cpp ("request (N tokens) exceeds the available context size (M tokens)"), vLLM ("This
# model's maximum context length is ..."), Ollama and others ("prompt is too long", "context window").
_CONTEXT = re.compile(
    r"context[_ ]length[_ ]exceeded|exceeds? the (?:available )?context (?:size|length|window)"
    r"|maximum context length|context window|prompt is too long|input is too long|too many tokens"
    r"|longer than the (?:model's )?(?:maximum )?context",
    re.I,
)
_LIMIT = re.compile(r"context (?:size|length|window)(?: is| of)?[\s(:=]{0,4}(\d+)", re.I)
_PROMPT = re.compile(r"(?:(?:request|prompt|input)[\s(:=]{0,4}(\d+) tokens|resulted in (\d+) tokens)", re.I)


@dataclass(frozen=True)
class Overflow:
    """A context-length error: the numbers the server gave, if any."""

    limit: int | None
    prompt_tokens: int | None
    text: str


def error_text(exc: Exception) -> str:
    """The server's words: the error body's message and code when the openai client parsed one, else str()."""
    body = getattr(exc, "body", None)
    parts = [str(exc)]
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            parts += [str(inner.get("message") or ""), str(inner.get("code") or "")]
        else:
            parts.append(json.dumps(body, default=str)[:500])
    return " ".join(p for p in parts if p)


def context_overflow(exc: Exception) -> Overflow | None:
    """An Overflow when `exc` (an HTTP 400) says the prompt exceeds the model's context; else None."""
    text = error_text(exc)
    if not _CONTEXT.search(text):
        return None
    limit = _LIMIT.search(text)
    prompt = _PROMPT.search(text)
    prompt_tokens = next((int(g) for g in prompt.groups() if g), None) if prompt else None
    return Overflow(int(limit.group(1)) if limit else None, prompt_tokens, text)


def overflow_message(o: Overflow, *, where: str, model: str, purpose: str, estimate: int) -> str:
    what = f" for {purpose}" if purpose else ""
    prompt = o.prompt_tokens or estimate
    about = "" if o.prompt_tokens else "about "
    limit = f"the model's context of {o.limit} tokens" if o.limit else "the model's context"
    return (
        f"the prompt{what} ({about}{prompt} tokens) is longer than {limit} at {where} (model {model}): "
        "HTTP 400 (context length exceeded); give the server a larger context (llama.cpp --ctx-size, Ollama "
        "num_ctx) or a shorter prompt (fewer files in kb.paths)"
    )


def timeout_hint(seconds: float, *, cold: bool) -> str:
    """Which setting bounded the request that timed out, and that raising it is the fix."""
    if cold:
        return (
            f"no reply within {seconds:g}s, the limit for requests sent before the server's first reply "
            "(a cold local server reads the whole prompt first): raise llm.first_timeout_s in sqlcanary.yml"
        )
    return f"no reply within {seconds:g}s: raise llm.timeout_s in sqlcanary.yml"


def retry_after_s(exc: Exception) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms or Retry-After in seconds), if it did."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None
