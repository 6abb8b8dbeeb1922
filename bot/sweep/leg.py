"""One leg of a sweep (`mode: sweep` in a matrix job): the setting it evaluates (input `setting`, the matrix entry
as JSON), the request and environment it sets, and where its RunResult goes:
`sqlcanary-results/sweep/<setting>/shard-<i>-of-<n>.json` (`run.json` without a shard).

How a setting reaches the agent: `agent`, `preset`, `repeat` as the RunRequest's fields (what `--agent`,
`--preset`, `--repeat` set); `model` and `temperature` through the evaluation's environment,
SQLCANARY_LLM_MODEL and SQLCANARY_LLM_TEMPERATURE (bot.config.llm `LLMSettings.with_env`), which the llm agent
reads over its config's `llm:` section."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from bot.base.errors import ConfigError
from bot.base.results import RunResult, RunSetting
from bot.cases.selection import Shard, parse_shard
from bot.config.llm import ENV_MODEL, ENV_TEMPERATURE
from bot.run.request import RunRequest
from bot.sweep.grid import Setting

SWEEP_DIR = "sweep"


class MatrixEntry(Setting):
    """A matrix entry of `sweep plan` (extra keys a workflow adds to its matrix are ignored)."""

    model_config = {**Setting.model_config, "extra": "ignore"}
    name: str = Field(alias="setting")
    index: int | None = Field(default=None, ge=1)
    shard: str | None = None


def parse_setting(text: str, *, shard: str | None = None) -> tuple[MatrixEntry, Shard | None]:
    """Input `setting` (JSON of the matrix entry); input `shard` wins over the entry's. ConfigError names the
    input and the key."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"input `setting`: not JSON ({exc.msg}); pass `${{{{ toJSON(matrix) }}}}`"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError("input `setting`: expected a JSON object (a matrix entry of `sweep plan`)")
    try:
        entry = MatrixEntry.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top)"
        raise ConfigError(f"input `setting`: `{key}`: {err['msg']}") from None
    text_shard = shard or entry.shard
    return entry, parse_shard(text_shard) if text_shard else None


def leg_request(base: RunRequest, entry: MatrixEntry, shard: Shard | None, out: Path) -> RunRequest:
    """The action's request with what the setting sets."""
    update: dict[str, Any] = {"out": str(out), "shard": str(shard) if shard else None}
    if entry.agent is not None:
        update["agent"] = entry.agent
    if entry.preset is not None:
        update["preset"] = entry.preset
    if entry.repeat is not None:
        update["repeat"] = entry.repeat
    return replace(base, **update)


def leg_environ(environ: dict[str, str], entry: MatrixEntry) -> dict[str, str]:
    env = dict(environ)
    if entry.model is not None:
        env[ENV_MODEL] = entry.model
    if entry.temperature is not None:
        env[ENV_TEMPERATURE] = repr(float(entry.temperature))
    return env


def leg_path(out_dir: Path, name: str, shard: Shard | None) -> Path:
    file = f"shard-{shard.index}-of-{shard.count}.json" if shard else "run.json"
    return out_dir / SWEEP_DIR / name / file


def record(entry: MatrixEntry) -> RunSetting:
    return RunSetting(
        name=entry.name,
        index=entry.index,
        model=entry.model,
        temperature=entry.temperature,
        agent=entry.agent,
        preset=entry.preset,
        repeat=entry.repeat,
    )


def with_setting(run: RunResult, entry: MatrixEntry) -> RunResult:
    """The run with its setting recorded (RunMeta.setting)."""
    return run.model_copy(update={"meta": run.meta.model_copy(update={"setting": record(entry)})})
