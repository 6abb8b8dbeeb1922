"""LLM failures: all exit 2, none ever carries the API key (messages go through `redact`)."""

from __future__ import annotations

from collections.abc import Iterable

from bot.base.errors import SqlcanaryError

MASK = "***"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret (at least 4 characters long) replaced by ***."""
    for secret in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class LLMError(SqlcanaryError):
    """The LLM could not be used."""


class BudgetExhausted(LLMError):
    """The next call would exceed the configured call or token budget; it was not sent."""


class LLMUnavailable(LLMError):
    """The endpoint failed (after retries), refused the key, or cannot be reached."""


class LLMBadOutput(LLMError):
    """The model's reply could not be parsed or validated, even after one re-ask."""


class LLMContextTooLong(LLMUnavailable):
    """The prompt does not fit the model's context window (HTTP 400 from the server). Not a format problem:
    the caller may shorten the prompt (the llm agent drops the KB files least related to the case)."""

    def __init__(self, message: str, *, limit: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit  # the model's context, in tokens, when the server said it
        self.prompt_tokens = prompt_tokens  # what the server counted for the prompt, when it said it
