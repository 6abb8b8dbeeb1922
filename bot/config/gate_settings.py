"""The quality gate's settings (sqlcanary.yml `gate:`, overridden by the command line): when a comparison fails."""

from __future__ import annotations

from pydantic import Field

from bot.base.results import FrozenModel


class GateSettings(FrozenModel):
    """When a comparison fails the gate. A regression is only called when it is significant (exact McNemar
    test on the paired attempts, p < alpha) and at least `min_regression_count` attempts moved."""

    max_regressions: int = Field(default=0, ge=0)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    max_pass_rate_drop: float | None = Field(default=None, ge=0, le=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_regression_count: int = Field(default=1, ge=1)
    # A deleted case cannot fail: removing cases fails the gate unless this says it is fine (renames are not
    # removals). A case that passed on base and is invalid on head (its gold or fixture broke) fails it unless
    # allow_invalid.
    allow_removed: bool = False
    allow_invalid: bool = False
    # A case the head edited (its question, gold or category) whose head answer fails the base's version, where
    # the base's answer passed it, fails the gate unless this says the edit is fine (`check` judges both).
    allow_edited: bool = False
