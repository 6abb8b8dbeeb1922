"""`mode: sweep-plan` and `mode: sweep-report`: a sweep's matrix, and its one table. Placeholder: issue 16."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.base.errors import ConfigError
from bot.base.settings import Settings

if TYPE_CHECKING:
    from bot.github.context import ActionContext
    from bot.github.publish import Publisher


def sweep_plan_step(ctx: ActionContext, settings: Settings, publisher: Publisher, *, workdir: Path) -> int:
    raise ConfigError("input `mode`: `sweep-plan` is not available yet")


def sweep_report_step(
    ctx: ActionContext, settings: Settings, publisher: Publisher, *, workdir: Path, out_dir: Path
) -> int:
    raise ConfigError("input `mode`: `sweep-report` is not available yet")
