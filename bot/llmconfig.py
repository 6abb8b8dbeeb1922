"""The `llm:` section of sqlcanary.yml. The API key itself is never in a config file: only the name of the
environment variable that holds it (`api_key_env`).

Config models, so they live in the bottom layer beside bot.config (which embeds them) rather than in bot.llm,
which sits above the config (ARCHITECTURE.md, import direction)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from bot.results import FrozenModel

ENV_BASE_URL = "SQLCANARY_LLM_BASE_URL"
ENV_MODEL = "SQLCANARY_LLM_MODEL"


class BudgetSettings(FrozenModel):
    """Per client (per run): None means unlimited."""

    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)


class Price(FrozenModel):
    """US dollars per 1,000 tokens."""

    input_per_1k: float = Field(ge=0)
    output_per_1k: float = Field(ge=0)


class LLMSettings(FrozenModel):
    """Any OpenAI-compatible endpoint: OpenAI, Azure (base_url + api_version), Ollama, vLLM."""

    base_url: str | None = None  # None: the openai package's default (api.openai.com)
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    api_version: str | None = None  # Azure: sent as the `api-version` query parameter
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=2048, gt=0)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)  # first retry waits about this long, doubling each time
    max_backoff_s: float = Field(default=30.0, ge=0)  # cap on one wait, Retry-After included
    budget: BudgetSettings = BudgetSettings()
    prices: dict[str, Price] = Field(default_factory=dict)
    cache: bool = True

    def with_env(self, environ: Mapping[str, str]) -> LLMSettings:
        """SQLCANARY_LLM_BASE_URL / SQLCANARY_LLM_MODEL (in `environ`, the process's as `main` read it) win over
        the config file."""
        env = environ
        update: dict[str, str] = {}
        if env.get(ENV_BASE_URL):
            update["base_url"] = env[ENV_BASE_URL]
        if env.get(ENV_MODEL):
            update["model"] = env[ENV_MODEL]
        return self.model_copy(update=update) if update else self
