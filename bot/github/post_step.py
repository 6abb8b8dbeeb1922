"""`mode: post`: post the results another job uploaded (a fork's pull request, or the shards of a sharded check)
as one sticky comment and one check run. Placeholder: built by issue 16."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.base.errors import ConfigError
from bot.base.settings import Settings

if TYPE_CHECKING:
    from bot.github.context import ActionContext
    from bot.github.publish import Publisher


def post_step(
    ctx: ActionContext, settings: Settings, publisher: Publisher, *, workdir: Path, out_dir: Path
) -> int:
    raise ConfigError("input `mode`: `post` is not available yet")
