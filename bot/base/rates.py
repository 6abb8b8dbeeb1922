"""The one way a rate is read, wherever a person types one: `run --min-pass-rate`, `check` and `compare`'s gate
flags, and `gate.min_pass_rate` / `gate.max_pass_rate_drop` in sqlcanary.yml.

A rate is a fraction from 0 to 1 (`0.9`) or a percentage (`90%`). A bare number above 1 (`90`) is refused with
the fix ("did you mean 90%?"): read as a fraction it would ask for 9000%, which no run can reach."""

from __future__ import annotations

import math

RATE_HELP = "0.9 or 90%"


class RateError(ValueError):
    """A value that is not a rate; the message names the setting, the value and the fix."""


def parse_rate(value: object, *, name: str) -> float:
    """`value` (a string as typed, or a number from YAML) as a fraction in [0, 1]; RateError names `name` (the
    flag or key; empty when the caller names it itself) and the value."""
    shown = str(value).strip()
    what = f"{name} {shown}" if name else shown
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RateError(f"{what}: a rate is 0-1 or a percentage ({RATE_HELP})")
    percent = isinstance(value, str) and shown.endswith("%")
    number_text = shown[:-1].strip() if percent else shown
    try:
        number = float(number_text) if isinstance(value, str) else float(value)
    except ValueError:
        raise RateError(f"{what or repr(value)}: not a rate ({RATE_HELP})") from None
    if not math.isfinite(number):
        raise RateError(f"{what}: not a rate ({RATE_HELP})")
    if percent:
        if not 0.0 <= number <= 100.0:
            raise RateError(f"{what}: a rate is between 0 and 1 (0% and 100%)")
        return number / 100.0
    if 1.0 < number <= 100.0:
        raise RateError(f"{what}: a rate is 0-1 or a percentage: did you mean {shown}%?")
    if not 0.0 <= number <= 1.0:
        raise RateError(f"{what}: a rate is between 0 and 1 (0% and 100%)")
    return number
