"""Typed requests: what `run` and `check` are asked to do, built once from the command line (or from the action's
inputs) and passed down, instead of an `argparse.Namespace` that every layer reads and rebuilds."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from bot.agents.sandbox import Policy
from bot.base.errors import ConfigError
from bot.cases.selection import split_tags
from bot.config.model import MAX_PERTURB
from bot.db.provision import Mode

# RunRequest fields a `check` hands on to both trees' `sqlcanary run` as `--flag VALUE` / `--flag`.
_VALUE_FLAGS = (
    "agent",
    "agent_timeout",
    "jobs",
    "preset",
    "statement_timeout",
    "row_cap",
    "repeat",
    "shard",
    "perturb",
    "side",
    "sandbox",
    "suite_data",
)
_SWITCHES = ("persistent", "no_answer_cache", "quiet", "verbose")


@dataclass(frozen=True)
class RunRequest:
    """One evaluation of a suite. Paths are as the user gave them (relative to the current folder)."""

    suite: str | None = None
    config: str | None = None
    agent: str | None = None
    agent_timeout: float | None = None
    persistent: bool = False
    dsn: str | None = field(default=None, repr=False)
    postgres: Mode | None = None
    tags: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    jobs: int | None = None
    preset: str | None = None
    statement_timeout: str | None = None
    row_cap: int | None = None
    repeat: int = 1
    perturb: int | None = None  # `--perturb K`: perturbed copies each query case must also agree on
    shard: str | None = None
    no_answer_cache: bool = False
    structural: bool = False
    llm_judge: bool = False
    min_pass_rate: float | None = None
    out: str | None = None
    quiet: bool = False
    verbose: bool = False  # a line per case as it finishes
    # pytest's habits: errored cases fail the run (exit 1); only the cases that did not pass in the RunResult at
    # `out` (`--last-failed`); stop at the first case that does not pass (`--exitfirst`). An invalid case (a gold
    # that does not run) fails the run (exit 2) unless `allow_invalid`.
    fail_on_errored: bool = False
    last_failed: bool = False
    exitfirst: bool = False
    allow_invalid: bool = False
    # Which side of a check this run evaluates (`check` sets it for each tree's run; None: a run of its own). The
    # head's agent is the pull request's: its cached answers are keyed by its whole tree, never `agent.inputs`.
    side: Literal["base", "head"] | None = None
    # The head's suite as its reader parsed it (bot.cases.suite_doc), a file `check` writes for the head's run:
    # read instead of the suite's YAML, which only the reader, holding nothing, parses.
    suite_data: str | None = None
    # The agent's sandbox when sqlcanary is root (bot.agents.sandbox): None is `on` for a side of a check (the
    # pull request's agent, or the base's beside it) and `auto` for a run of its own; the Action asks for `on`.
    sandbox: Policy | None = None
    # The folder the paths above are relative to, and where a config is looked for (None: the current folder).
    # The Action gives its working directory here instead of changing the process's current folder.
    cwd: str | None = None

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ConfigError("--repeat must be at least 1")
        if self.perturb is not None and not 0 <= self.perturb <= MAX_PERTURB:
            raise ConfigError(f"--perturb must be between 0 and {MAX_PERTURB}")
        if self.jobs is not None and self.jobs < 1:
            raise ConfigError("--jobs must be at least 1")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        given = vars(args)
        values: dict[str, Any] = {f.name: given[f.name] for f in fields(cls) if given.get(f.name) is not None}
        values["tags"] = split_tags(args.tags)
        values["ids"] = tuple(args.ids or ())
        values["repeat"] = args.repeat if args.repeat is not None else 1
        return cls(**values)

    @property
    def sandbox_policy(self) -> Policy:
        return self.sandbox or ("on" if self.side else "auto")

    @property
    def folder(self) -> Path:
        """The folder relative paths start from."""
        return Path(self.cwd) if self.cwd else Path.cwd()

    def anchored(self) -> RunRequest:
        """This request with `suite`, `config` and `out` made absolute against `cwd` (unchanged without one)."""
        if not self.cwd:
            return self

        def absolute(path: str | None) -> str | None:
            return str(Path(self.cwd or ".") / path) if path and not Path(path).is_absolute() else path

        return replace(self, suite=absolute(self.suite), config=absolute(self.config), out=absolute(self.out))

    @property
    def filters(self) -> dict[str, list[str]]:
        """The case selection, as a RunResult records it (compare refuses runs of different selections)."""
        return {k: list(v) for k, v in (("tags", self.tags), ("ids", self.ids)) if v}

    def run_argv(self) -> list[str]:
        """This request as `sqlcanary run` arguments (what `check` starts in each tree's child process)."""
        argv = ["run", *([self.suite] if self.suite else [])]
        argv += ["--config", self.config] if self.config else []
        argv += ["--out", self.out] if self.out else []
        for name in _VALUE_FLAGS:
            value = getattr(self, name)
            if value is not None and not (name == "repeat" and value == 1):
                argv += [f"--{name.replace('_', '-')}", str(value)]
        argv += ["--tags", ",".join(self.tags)] if self.tags else []
        for case_id in self.ids:
            argv += ["--id", case_id]
        argv += [f"--{name.replace('_', '-')}" for name in _SWITCHES if getattr(self, name)]
        return [*argv, "--allow-invalid"]  # the check's gate judges invalid cases (gate.allow_invalid)
