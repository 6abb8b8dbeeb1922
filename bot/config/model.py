"""The sqlcanary.yml model. Paths in it are relative to the file; command-line options win over it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from bot.base.errors import ConfigError
from bot.base.results import FrozenModel
from bot.base.yamlread import LineDict, LineList, load_yaml_file
from bot.config.gate_settings import GateSettings
from bot.config.llm import LLMSettings
from bot.config.presets import check_preset
from bot.config.problems import Problem, unknown_key_message, validation_problems

CONFIG_NAMES = ("sqlcanary.yml", "sqlcanary.yaml")
log = logging.getLogger("sqlcanary.config")
HIDDEN_KEYS = ("base_dir", "config_file")  # set by load_config, never written in the file
# A config resolved by `check` for one side (bot.config.trusted.write_resolved): JSON, loaded as it is.
RESOLVED_MARK = "sqlcanary_resolved_config"
RESOLVED_VERSION = 1
# The only files a repair may write (bot.kb.files uses these): KB text, never code or data such as JSON; and
# folders it never writes into, whatever `kb.paths` says.
KB_SUFFIXES = (".yaml", ".yml", ".sql", ".md")
NEVER_WRITTEN_DIRS = (".git", ".github", ".sqlcanary")


MAX_PERTURB = 16  # perturbed copies a case may ask for (`--perturb`, `perturb:`)


class AgentConfig(FrozenModel):
    spec: str
    timeout: float = Field(default=120.0, gt=0)
    persistent: bool = False
    options: dict[str, Any] = Field(default_factory=dict)
    # What the agent's answers depend on, for the answer cache. Unset: every file of the repository (sound, and
    # any change re-asks every case). Globs relative to this file narrow it: a file the agent reads that no glob
    # matches can then change without the cached answers noticing.
    inputs: tuple[str, ...] | None = None
    env: tuple[str, ...] = ()  # environment variables whose values decide its answers (hashed, never stored)
    # Its answers depend on something outside the repository (a hosted model, a service): never answer-cached.
    remote: bool = False

    @field_validator("inputs", "env", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


class KBConfig(FrozenModel):
    paths: tuple[str, ...] = ()


class CacheConfig(FrozenModel):
    answers: bool = True  # reuse an agent's answer when its fingerprint, the KB and the case are unchanged
    runs: bool = True  # `sqlcanary check`: reuse the base commit's RunResult


class Config(FrozenModel):
    suite: str | None = None
    agent: AgentConfig | None = None
    dsn: str | None = Field(default=None, repr=False)
    postgres: Literal["auto", "embedded", "docker"] = "auto"
    jobs: int | None = Field(default=None, ge=1, le=64)
    statement_timeout: str | int | None = None
    row_cap: int | None = Field(default=None, gt=0)
    perturb: int | None = Field(default=None, ge=0, le=MAX_PERTURB)
    preset: str | None = None
    out: str | None = None
    kb: KBConfig = KBConfig()
    llm: LLMSettings = LLMSettings()  # the built-in `llm` agent, the llm_judge scorer and `repair`
    cache: CacheConfig = CacheConfig()
    gate: GateSettings | None = None  # `sqlcanary check`: when the comparison fails (flags win over it)
    base_dir: str = "."
    config_file: str | None = None  # set by load_config: the file this came from

    @field_validator("agent", mode="before")
    @classmethod
    def _agent_spec(cls, value: Any) -> Any:
        return {"spec": value} if isinstance(value, str) else value

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        return check_preset(value)

    def path(self, value: str) -> Path:
        p = Path(value)
        return p if p.is_absolute() else Path(self.base_dir) / p


def _resolved(p: Path) -> Config | None:
    """A config `check` resolved for one side (bot.config.trusted), or None for an ordinary config file."""
    if p.suffix != ".json":
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the resolved config: {exc}", path=str(p)) from exc
    if not isinstance(doc, dict) or doc.get(RESOLVED_MARK) != RESOLVED_VERSION:
        return None
    config = Config.model_validate(doc["config"])
    return config.model_copy(update={"config_file": str(p.resolve())})


def _read(p: Path) -> tuple[dict, Config | None, list[Problem]]:
    doc = load_yaml_file(p)
    if doc is None:
        doc = LineDict()
        doc.line, doc.key_lines = 1, {}
    if not isinstance(doc, dict):
        raise ConfigError("a config file must be a mapping", path=str(p), line=1)
    known = [k for k in Config.model_fields if k not in HIDDEN_KEYS]
    line_of = doc.line_of if isinstance(doc, LineDict) else (lambda _k: None)
    problems = [
        Problem(str(p), line_of(k), k, unknown_key_message(k, known) + "; paths are relative to this file")
        for k in HIDDEN_KEYS
        if k in doc
    ]
    fields = {k: v for k, v in doc.items() if k not in HIDDEN_KEYS}
    try:
        config = Config(**fields, base_dir=str(p.parent.resolve()), config_file=str(p.resolve()))
    except ValidationError as exc:
        problems += validation_problems(exc, doc, Config, path=str(p), hidden=HIDDEN_KEYS)
        return doc, None, sorted(problems, key=lambda pr: pr.line or 0)
    except TypeError as exc:
        return doc, None, [*problems, Problem(str(p), None, "", str(exc))]
    return doc, (None if problems else config), problems


def read_config(path: str | Path) -> tuple[Config | None, list[Problem]]:
    """sqlcanary.yml and every problem in it, in our words (bot.config.problems); the Config when there is none.
    An unreadable or unparsable file raises: there is nothing more to say of it. `kb.paths` is not checked."""
    _, config, problems = _read(Path(path))
    return config, problems


def load_config(path: str | Path) -> Config:
    p = Path(path)
    resolved = _resolved(p)
    if resolved is not None:
        return resolved
    doc, config, problems = _read(p)
    if config is None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more: `sqlcanary validate` lists them all)" if problems[1:] else ""
        raise ConfigError(first.what + more, path=first.path, line=first.line)
    check_kb_paths(config, lines=_glob_lines(doc))
    return config


def _glob_lines(doc: dict) -> tuple[int | None, ...]:
    """The line of each `kb.paths` glob in the file (the `kb` key's line when the YAML did not say)."""
    kb = doc.get("kb")
    paths = kb.get("paths") if isinstance(kb, dict) else None
    if isinstance(paths, LineList):
        return tuple(paths.line_of(i) for i in range(len(paths)))
    line = doc.line_of("kb") if isinstance(doc, LineDict) else None
    return (line,) * len(paths) if isinstance(paths, list | tuple) else ()


def unwritable_kb_file(rel: str) -> str | None:
    """Why the repair loop can never edit the KB file `rel` (a posix path relative to the config's folder), or
    None when it can."""
    parts = rel.split("/")
    hidden = next((p for p in parts[:-1] if p.lower() in NEVER_WRITTEN_DIRS), None)
    if hidden:
        return f"files under {hidden}/ are never written"
    if Path(rel).suffix.lower() not in KB_SUFFIXES:
        return f"only {', '.join(KB_SUFFIXES)} files are KB files the repair can edit (no code, no data)"
    return None


def check_kb_paths(config: Config, *, lines: tuple[int | None, ...] = ()) -> None:
    """ConfigError (exit 2) naming the glob and the file when a `kb.paths` glob matches an existing file that
    the repair loop could never edit: every plan touching it would be refused after the LLM call was paid for.
    Globs that are absolute or hold `..` are left to the repair loop, which refuses them."""
    base = Path(config.base_dir)
    for i, glob in enumerate(config.kb.paths):
        if not glob or Path(glob).is_absolute() or ".." in glob.split("/"):
            continue
        # `kb/**` matches every file below kb/ for the repair loop (bot.kb.files.glob_regex); pathlib's
        # glob gives only the folders for it, so their files are looked at too.
        matches = set(base.glob(glob)) | (set(base.glob(glob + "/*")) if glob.endswith("**") else set())
        for found in sorted(matches):
            if not found.is_file():
                continue
            rel = found.relative_to(base).as_posix()
            why = unwritable_kb_file(rel)
            if why:
                raise ConfigError(
                    f"kb.paths glob {glob!r} matches {rel}, which the repair can never edit: {why}. "
                    "Narrow the glob to the KB files, e.g. 'kb/**/*.yaml'",
                    path=config.config_file,
                    line=lines[i] if i < len(lines) else None,
                )


def config_near(folder: Path) -> Path | None:
    """The sqlcanary.yml of `folder` or of the nearest folder above it, as pytest and dbt look for theirs: the
    search stops at the repository's root (a folder holding `.git`) or at the filesystem's root."""
    here = folder.absolute()
    for candidate in (here, *here.parents):
        for name in CONFIG_NAMES:
            if (candidate / name).is_file():
                return candidate / name
        if (candidate / ".git").exists():
            return None
    return None


def find_config(explicit: str | None, suite: str | None, *, cwd: Path | None = None) -> Config:
    """--config; else sqlcanary.yml in the suite folder (the most specific); else the one of `cwd` (default: the
    current folder) or of the nearest folder above it, up to the repository root; else empty. Which file was
    found is logged (logger `sqlcanary.config`, level INFO), for a `--verbose` that shows INFO logs."""
    here = cwd or Path.cwd()
    if explicit:
        if not Path(explicit).is_file():
            raise ConfigError("no such config file", path=explicit)
        return load_config(explicit)
    in_suite = [Path(suite) / n for n in CONFIG_NAMES] if suite and Path(suite).is_dir() else []
    found = next((p for p in in_suite if p.is_file()), None) or config_near(here)
    if found is None:
        log.info("no sqlcanary.yml in %s or above it: the defaults apply", here)
        return Config(base_dir=str(here))
    log.info("config: %s", found)
    return load_config(found)


def database_url(cli_dsn: str | None, config: Config, environ_url: str | None) -> str | None:
    """--dsn, then DATABASE_URL (`Settings.database_url`), then the config's `dsn:`."""
    return cli_dsn or environ_url or config.dsn
