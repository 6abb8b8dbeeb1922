"""The files the head's `agent:` names, settled by the head's reader (bot.check.head_reader), never by root.

A pull request's `sqlcanary.yml` may name files for its agent: the file of `predictions:PATH` or `run:PATH`, and
the built-in `llm` agent's `options.schema_file`. sqlcanary itself reads those (they are not the agent's own code),
in the head's `sqlcanary run`, which runs as root. So the reader, which runs with the agent's privileges, settles
them first:

- `schema_file` is read here and handed on as `schema` text: root never opens it. A file the reader cannot read
  (`/root/...`, `/proc/1/environ`) is the config's error, exit 2.
- a `predictions:` or `run:` file must be a regular file inside the head's checkout, reached without leaving it
  through a link; the spec is handed on with its resolved path. The checkout is root's and no process of the
  pull request can write it, so root then reads the very bytes the reader could read.

What the reader says is data to the check, which decides the head's config from it (bot.config.trusted): a
reader that lies can describe its agent, never reach a file for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.base.errors import ConfigError
from bot.config.model import Config

FILE_KINDS = ("predictions", "run")  # agents whose file sqlcanary reads
MAX_SCHEMA_BYTES = 4 * 1024 * 1024


def settle_agent_files(config: Config, checkout: Path) -> Config:
    """`config` with its agent's files settled (see the module); ConfigError naming the file otherwise."""
    agent = config.agent
    if agent is None:
        return config
    kind, sep, arg = agent.spec.partition(":")
    spec, options = agent.spec, dict(agent.options)
    if kind.strip() in FILE_KINDS and arg.strip():
        spec = (
            f"{kind.strip()}{sep}{_inside(arg.strip(), config, checkout, what=f'the `{kind.strip()}:` file')}"
        )
    if kind.strip() == "llm" and "schema_file" in options:
        named = options.pop("schema_file")
        if "schema" not in options:
            options["schema"] = _schema_text(named, config, checkout)
    return config.model_copy(update={"agent": agent.model_copy(update={"spec": spec, "options": options})})


def _schema_text(named: Any, config: Config, checkout: Path) -> str | dict[str, str]:
    if isinstance(named, dict):
        return {str(db): _read_text(path, config, checkout) for db, path in named.items()}
    return _read_text(named, config, checkout)


def _read_text(named: Any, config: Config, checkout: Path) -> str:
    what = "`agent.options.schema_file`"
    if not isinstance(named, str):
        raise ConfigError(f"{what} must be a path or a mapping of database to path", path=config.config_file)
    path = Path(_inside(named, config, checkout, what=what))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{what} {named!r} cannot be read: {exc.strerror}", path=config.config_file
        ) from None
    if len(data) > MAX_SCHEMA_BYTES:
        raise ConfigError(f"{what} {named!r} is over {MAX_SCHEMA_BYTES:,} bytes", path=config.config_file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {named!r} is not UTF-8 text", path=config.config_file) from None


def _inside(named: str, config: Config, checkout: Path, *, what: str) -> str:
    """`named` (relative to the config's folder) resolved: a regular file inside `checkout`, or ConfigError."""
    raw = Path(named)
    path = (raw if raw.is_absolute() else Path(config.base_dir) / raw).resolve()
    root = checkout.resolve()
    if not path.is_relative_to(root):
        raise ConfigError(
            f"{what} {named!r} is outside the pull request's checkout ({path}): a pull request's agent may name "
            "only its own files",
            path=config.config_file,
        )
    if not path.is_file():
        raise ConfigError(f"{what} {named!r} is not a regular file in the checkout", path=config.config_file)
    return str(path)
