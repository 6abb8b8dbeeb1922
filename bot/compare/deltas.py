"""A pass rate's change from the base to the head (overall, per category, per tag): what the gate reads beside the
cases' transitions, and what the reports show."""

from __future__ import annotations

from bot.base.results import Counts, FrozenModel


class RateDelta(FrozenModel):
    base: Counts
    head: Counts
    base_rate: float | None
    head_rate: float | None
    delta: float | None  # head_rate - base_rate
