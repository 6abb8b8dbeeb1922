"""What the process environment says, read once: `Settings.from_environ(os.environ)` in `cli.main` (and in the
action's `main`), then passed down. No other module reads the environment.

The environment itself is kept (`environ`, never printed) for the few places that must look a variable up by a
name the config gives: the LLM key (`llm.api_key_env`), the agent's allow-listed variables (`agent.env`), and the
LLM endpoint overrides SQLCANARY_LLM_BASE_URL / SQLCANARY_LLM_MODEL (`LLMSettings.with_env`, which also runs in
the per-tree child processes, where they arrive through the environment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from bot.base.secrets import secret_values

ENV_CACHE_DIR = "SQLCANARY_CACHE_DIR"
ENV_ANSWER_CACHE = "SQLCANARY_ANSWER_CACHE"
ENV_BASE_BRANCH = "SQLCANARY_BASE_BRANCH"
ENV_PG_SEED = "SQLCANARY_PG_SEED"
_OFF = ("0", "off", "false", "no")


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("sqlcanary"))


@dataclass(frozen=True)
class Settings:
    cache_dir: Path  # answers, base runs, LLM replies
    pg_dir: Path | None = None  # the embedded server's data directories (default: cache_dir)
    pg_seed: Path | None = None  # SQLCANARY_PG_SEED (the image's): initialised data dirs the action copies
    answer_cache: bool = True  # SQLCANARY_ANSWER_CACHE=off: every answer asked afresh
    database_url: str | None = field(default=None, repr=False)  # DATABASE_URL
    base_branch: str | None = None  # `check` without --base: origin/<this>, then <this> (the action sets it)
    ci: bool = False  # CI=true: plain progress lines, no bar
    secrets: tuple[str, ...] = field(default=(), repr=False)  # values to mask wherever text is shown
    environ: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)

    @property
    def embedded_dir(self) -> Path:
        return self.pg_dir or self.cache_dir

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        env = MappingProxyType(dict(environ))
        cache = Path(env[ENV_CACHE_DIR]).expanduser() if env.get(ENV_CACHE_DIR) else default_cache_dir()
        return cls(
            cache_dir=cache,
            pg_dir=cache,
            pg_seed=Path(env[ENV_PG_SEED]) if env.get(ENV_PG_SEED) else None,
            answer_cache=env.get(ENV_ANSWER_CACHE, "").strip().lower() not in _OFF,
            database_url=env.get("DATABASE_URL") or None,
            base_branch=(env.get(ENV_BASE_BRANCH) or "").strip() or None,
            ci=(env.get("CI") or "").strip().lower() not in ("", *_OFF),
            secrets=secret_values(env),
            environ=env,
        )
