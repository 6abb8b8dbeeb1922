"""This sqlcanary's version: `bot.__version__`, which the distribution's metadata is built from (pyproject.toml),
so `sqlcanary --version` imports nothing else (bot.cli; importlib.metadata alone took 50 ms)."""

from __future__ import annotations

import bot


def sqlcanary_version() -> str:
    return bot.__version__
