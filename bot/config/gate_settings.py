"""The quality gate's settings (sqlcanary.yml `gate:`, overridden by the command line): when a comparison fails.

Its rates are read by bot.base.rates, as the command line's are: `min_pass_rate: 90%` and `0.9` both mean 90%,
and `90` is refused with the fix."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from bot.base.rates import RateError, parse_rate
from bot.base.results import FrozenModel


def _rate(value: object) -> object:
    """A rate as bot.base.rates reads it; None stays None (the setting is off). The error is the parser's words
    alone (the loader names the key and the line)."""
    if value is None:
        return None
    try:
        return parse_rate(value, name="")
    except RateError as exc:
        raise PydanticCustomError("rate", str(exc)) from None


# What an editor's schema says a rate may be: a fraction, a percentage string, or nothing (off).
_RATE_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": 1},
        {"type": "string", "pattern": r"^\s*(100(\.0+)?|\d{1,2}(\.\d+)?)\s*%\s*$"},
        {"type": "null"},
    ],
    "description": "a fraction (0.9) or a percentage (90%)",
}
Rate = Annotated[float | None, BeforeValidator(_rate), WithJsonSchema(_RATE_SCHEMA)]


def _increase(value: object) -> object:
    """An allowed increase: a percentage (`20%`, `150%`) or a fraction (`0.2`, `1.5`); None stays None (off)."""
    if value is None:
        return None
    shown = str(value).strip()
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PydanticCustomError("increase", "an increase is a percentage (20%) or a fraction (0.2)")
    try:
        number = float(shown[:-1]) / 100 if shown.endswith("%") else float(shown)
    except ValueError:
        raise PydanticCustomError(
            "increase", "an increase is a percentage (20%) or a fraction (0.2)"
        ) from None
    if not 0 <= number <= 1000 or number != number:
        raise PydanticCustomError("increase", "an increase is between 0% and 100000%")
    return number


_INCREASE_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%\s*$"},
        {"type": "null"},
    ],
    "description": "an increase of the median: a fraction (0.2) or a percentage (20%)",
}
Increase = Annotated[float | None, BeforeValidator(_increase), WithJsonSchema(_INCREASE_SCHEMA)]


class GateSettings(FrozenModel):
    """When a comparison fails the gate. A regression is only called when it is significant (exact McNemar
    test on the paired attempts, p < alpha) and at least `min_regression_count` attempts moved."""

    max_regressions: int = Field(default=0, ge=0)
    min_pass_rate: Rate = Field(default=None, ge=0, le=1)
    max_pass_rate_drop: Rate = Field(default=None, ge=0, le=1)
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
    # Evaluation metrics (bot.compare.metrics): how much the median per case may rise, base to head, before the
    # gate fails; only a rise whose 95% interval lies wholly above zero counts. None: not gated.
    max_cost_increase: Increase = None
    max_tokens_increase: Increase = None
    max_latency_increase: Increase = None
    max_query_cost_increase: Increase = None
    # A case whose prediction's plan costs this many times the base's (planner estimates) fails the gate, named,
    # whatever the median does: one query that now scans a whole table is worth a look. None: not gated.
    max_query_cost_ratio: float | None = Field(default=None, ge=1)
