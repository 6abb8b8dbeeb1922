"""The `llm:` section of sqlcanary.yml. The API key itself is never in a config file: only the name of the
environment variable that holds it (`api_key_env`).

Config models, so they live in the bottom layer beside bot.config.model (which embeds them) rather than in bot.llm,
which sits above the config (ARCHITECTURE.md, import direction)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from bot.base.errors import ConfigError
from bot.base.results import FrozenModel

ENV_BASE_URL = "SQLCANARY_LLM_BASE_URL"
ENV_MODEL = "SQLCANARY_LLM_MODEL"
ENV_TEMPERATURE = "SQLCANARY_LLM_TEMPERATURE"  # a sweep setting's temperature (bot.sweep)
LOCAL_FIRST_TIMEOUT_S = 600.0  # a cold llama.cpp on 2 CPU cores reads a 7k-token prompt in about 200 s
LOCAL_TIMEOUT_S = 180.0  # a warm local request: prompt tail plus a few hundred tokens at 10-20 tokens/s
REPLAY_PREFIX = (
    "replay:"  # `base_url: replay:FILE`: answers from a replay file (bot.llm.replay), no key, no model
)
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal")


def replay_file(base_url: str | None) -> str | None:
    """FILE of a `replay:FILE` base_url (relative to the current folder), else None."""
    if base_url and base_url.startswith(REPLAY_PREFIX):
        return base_url[len(REPLAY_PREFIX) :].strip()
    return None


def is_local(base_url: str | None) -> bool:
    """A server on this machine (or the Docker host): slow on a CPU, often one request at a time."""
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.") or host.endswith(".localhost")


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

    # None: the openai package's default (api.openai.com); `replay:FILE`: the shipped replay server (bot.llm.replay)
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    api_version: str | None = None  # Azure: sent as the `api-version` query parameter
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=2048, gt=0)
    # Seconds one request may take. None: 60 for a hosted API, LOCAL_TIMEOUT_S for a local base_url.
    timeout_s: float | None = Field(default=None, gt=0)
    # The requests sent before the first reply came back: a cold local server reads the whole prompt first
    # (minutes on a CPU), and requests queued behind it wait as long. None: timeout_s for a hosted API,
    # LOCAL_FIRST_TIMEOUT_S for a local base_url.
    first_timeout_s: float | None = Field(default=None, gt=0)
    # Requests in flight at once from one client (`--jobs` workers share it). None: 1 for a local base_url
    # (llama.cpp and Ollama serve one request per slot: the others would queue there and time out), else no cap.
    max_concurrency: int | None = Field(default=None, ge=1)
    max_retries: int = Field(default=3, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)  # first retry waits about this long, doubling each time
    max_backoff_s: float = Field(default=30.0, ge=0)  # cap on one wait, Retry-After included
    budget: BudgetSettings = BudgetSettings()
    prices: dict[str, Price] = Field(default_factory=dict)
    cache: bool = True

    @field_validator("base_url")
    @classmethod
    def _replay_names_a_file(cls, value: str | None) -> str | None:
        if value is not None and value.startswith(REPLAY_PREFIX) and not replay_file(value):
            raise ValueError("`replay:` needs a file: replay:path/to/replies.yml")
        return value

    @property
    def request_timeout_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return LOCAL_TIMEOUT_S if is_local(self.base_url) else 60.0

    @property
    def cold_timeout_s(self) -> float:
        if self.first_timeout_s is not None:
            return max(self.first_timeout_s, self.request_timeout_s)
        return (
            max(LOCAL_FIRST_TIMEOUT_S, self.request_timeout_s)
            if is_local(self.base_url)
            else self.request_timeout_s
        )

    @property
    def concurrency(self) -> int | None:
        if self.max_concurrency is not None:
            return self.max_concurrency
        return 1 if is_local(self.base_url) else None

    def with_env(self, environ: Mapping[str, str]) -> LLMSettings:
        """SQLCANARY_LLM_BASE_URL / SQLCANARY_LLM_MODEL / SQLCANARY_LLM_TEMPERATURE (in `environ`, the process's
        as `main` read it) win over the config file."""
        env = environ
        update: dict[str, object] = {}
        if env.get(ENV_BASE_URL):
            update["base_url"] = env[ENV_BASE_URL]
        if env.get(ENV_MODEL):
            update["model"] = env[ENV_MODEL]
        if env.get(ENV_TEMPERATURE):
            update["temperature"] = _temperature(env[ENV_TEMPERATURE])
        return self.model_copy(update=update) if update else self


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 2.0:
        raise ConfigError(f"{ENV_TEMPERATURE}: expected a number from 0 to 2, got {text!r}")
    return value
