"""The base of every model written to disk or read from a file (re-exported by bot.base.results)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    """Immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")
