"""The Action's inputs (action.yml) and the runner's own variables, read from an environment mapping.

The runner passes input `github-token` as `INPUT_GITHUB-TOKEN`: upper-cased, hyphens KEPT; an unset input arrives
as an empty string, and `required` is not enforced. The underscore spelling (`INPUT_GITHUB_TOKEN`, what other
runners and hand-written `env:` blocks produce) is accepted too. Every value is validated here, and a bad one
names the input. tests/unit/test_action_inputs.py keeps this model and action.yml in step, both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator

from bot.base.errors import ConfigError
from bot.base.results import FrozenModel
from bot.config.model import MAX_PERTURB
from bot.github.metric_outputs import OUTPUT_NAMES

# A mode's name (input `mode`): which modes there are is bot.modes.MODES's to say (bot.modes.find_mode).
Mode = Annotated[str, Field(pattern=r"^[a-z][a-z-]{0,30}$")]
# What the action writes to GITHUB_OUTPUT (action.yml declares the same names).
OUTPUTS = (
    "verdict",
    "regressions",
    "fixes",
    "pass-rate-head",
    "pass-rate-base",
    "report-path",
    "comment-path",
    "results-path",
    "repair-pr-number",
    "repair-pr-url",
    "repaired",
    "still-failing",
    "matrix",
    *OUTPUT_NAMES,
)
_TRUE = ("true", "yes", "1", "on")
_FALSE = ("false", "no", "0", "off")


class ActionInputs(FrozenModel):
    """One field per input of action.yml (hyphens as underscores); secrets never appear in a repr."""

    config: str | None = None
    suite: str | None = None
    mode: Mode | None = None  # None: from the event (pull_request: check, push: baseline, dispatch: sweep)
    github_token: str | None = Field(default=None, repr=False)
    repair_token: str | None = Field(default=None, repr=False)
    openai_api_key: str | None = Field(default=None, repr=False)
    openai_base_url: str | None = None
    model: str | None = None
    database_url: str | None = Field(default=None, repr=False)
    fail_on_regression: bool = True
    comment: Literal["sticky", "off"] = "sticky"
    check_run: bool = True
    repeat: int = Field(default=1, ge=1, le=50)
    perturb: int | None = Field(default=None, ge=0, le=MAX_PERTURB)
    shard: str | None = None
    comment_key: str | None = Field(default=None, max_length=100)
    cache_dir: str = ".sqlcanary/cache"
    working_directory: str = "."
    setting: str | None = Field(default=None, max_length=10_000)
    grid: str | None = None
    shards: int = Field(default=1, ge=1, le=256)
    artifacts: str | None = None
    repair: bool = False
    repair_max_llm_calls: int = Field(default=20, ge=0, le=1000)
    repair_max_agent_calls: int = Field(default=100, ge=0, le=10000)
    repair_max_minutes: float = Field(default=15, gt=0, le=360)

    @field_validator("fail_on_regression", "check_run", "repair", mode="before")
    @classmethod
    def _boolean(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(f"expected true or false, got {value!r}")
        return value

    @field_validator("shard")
    @classmethod
    def _shard(cls, value: str | None) -> str | None:
        if value is None:
            return None
        index, _, total = value.partition("/")
        if not (index.isdigit() and total.isdigit() and 1 <= int(index) <= int(total)):
            raise ValueError(f"expected I/N with 1 <= I <= N, got {value!r}")
        return value

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(
            v for v in (self.github_token, self.repair_token, self.openai_api_key, self.database_url) if v
        )


def input_names() -> tuple[str, ...]:
    """The inputs as action.yml spells them."""
    return tuple(name.replace("_", "-") for name in ActionInputs.model_fields)


def read_inputs(environ: Mapping[str, str]) -> ActionInputs:
    """The inputs the runner passed; empty means unset (the model's default applies)."""
    values: dict[str, str] = {}
    for field_name in ActionInputs.model_fields:
        name = field_name.upper()
        for key in (f"INPUT_{name.replace('_', '-')}", f"INPUT_{name}"):
            raw = environ.get(key, "").strip()
            if raw:
                values[field_name] = raw
                break
    try:
        return ActionInputs.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]).replace("_", "-") if err["loc"] else "?"
        shown = (
            ""
            if name in ("github-token", "repair-token", "openai-api-key", "database-url")
            else (f" (got {values.get(str(err['loc'][0]), '')!r})")
        )
        raise ConfigError(f"input `{name}`: {err['msg']}{shown}") from None


@dataclass(frozen=True)
class RunnerContext:
    """The runner's variables (https://docs.github.com/actions/reference/variables-reference): paths are never
    hard-coded, since under nektos/act GITHUB_WORKSPACE is the host's path."""

    workspace: Path
    event_name: str
    event_path: Path
    output: Path | None
    step_summary: Path | None
    api_url: str
    server_url: str
    repository: str
    sha: str | None
    run_id: str
    job: str
    workflow: str

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> RunnerContext:
        missing = [
            k for k in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY") if not environ.get(k)
        ]
        if missing:
            raise ConfigError(
                f"not running as a GitHub Action: {', '.join(missing)} is not set "
                "(run `sqlcanary check` on a machine instead)"
            )

        def path(name: str) -> Path | None:
            return Path(environ[name]) if environ.get(name) else None

        return cls(
            workspace=Path(environ.get("GITHUB_WORKSPACE") or ".").resolve(),
            event_name=environ["GITHUB_EVENT_NAME"],
            event_path=Path(environ["GITHUB_EVENT_PATH"]),
            output=path("GITHUB_OUTPUT"),
            step_summary=path("GITHUB_STEP_SUMMARY"),
            api_url=environ.get("GITHUB_API_URL") or "https://api.github.com",
            server_url=environ.get("GITHUB_SERVER_URL") or "https://github.com",
            repository=environ["GITHUB_REPOSITORY"],
            sha=environ.get("GITHUB_SHA") or None,
            run_id=environ.get("GITHUB_RUN_ID", ""),
            job=environ.get("GITHUB_JOB", ""),
            workflow=environ.get("GITHUB_WORKFLOW", ""),
        )

    @property
    def run_url(self) -> str | None:
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}" if self.run_id else None
