"""What every mode of the Action gets besides its context: the services `sqlcanary action` set up for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.base.git import Git
from bot.base.settings import Settings
from bot.github.context import ActionContext
from bot.github.publish import Publisher
from bot.run.request import RunRequest


@dataclass(frozen=True)
class Step:
    """The evaluation's settings (caches in the workspace, the LLM key only on a trusted event), the publisher
    (comment, check run, summary, outputs), the checkout's repository, the working directory and the results
    folder in it, and the run the inputs ask for."""

    settings: Settings
    publisher: Publisher
    git: Git
    workdir: Path
    out_dir: Path
    request: RunRequest

    def inside(self, text: str) -> Path:
        """An input's path: as given when absolute, else relative to the working directory."""
        path = Path(text)
        return path if path.is_absolute() else self.workdir / path

    def say(self, text: str) -> None:
        self.publisher.log.say(f"sqlcanary: {text}")


# A mode: one straight script over the services; returns the step's exit code.
ModeFn = Callable[[ActionContext, Step], int]


@dataclass(frozen=True)
class ModeEntry:
    """A mode of the registry (bot.modes.MODES): its script, and whether it evaluates the suite (then an
    embedded PostgreSQL, when input `database-url` is unset, lives in the cache folder actions/cache keeps)."""

    run: ModeFn
    evaluates: bool = False
