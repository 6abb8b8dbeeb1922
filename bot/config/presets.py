"""The names of the comparison presets, in a bottom-layer module so that both case files (bot.cases) and
sqlcanary.yml (bot.config.model) can validate a `preset:` against one list. bot/scoring/presets.py implements them
(tests/unit/test_tables.py checks that every name but `sqlcanary` has a legacy evaluator)."""

from __future__ import annotations

# sqlcanary's own rules first, then the public evaluators it can imitate.
PRESET_NAMES: tuple[str, ...] = (
    "sqlcanary",
    "bird",
    "critic",
    "test_suite",
    "defog",
    "defog_exact",
    "spider2",
)


def check_preset(value: str | None) -> str | None:
    """A pydantic validator body: None (unset) or a known preset name, else ValueError listing the known ones."""
    if value is not None and value not in PRESET_NAMES:
        raise ValueError(f"unknown preset {value!r} (known: {', '.join(PRESET_NAMES)})")
    return value
