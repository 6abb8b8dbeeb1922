"""This sqlcanary's version, from its installed distribution: a leaf, so `sqlcanary --version` imports nothing
else (bot.cli)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def sqlcanary_version() -> str:
    try:
        return version("sqlcanary")
    except PackageNotFoundError:
        return "0+unknown"
