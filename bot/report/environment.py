"""The reports' Jinja environment: bot.base.templating's settings and filters plus the report globals."""

from __future__ import annotations

import functools

from jinja2 import Environment

from bot.base.templating import new_environment
from bot.report.marker import MARKER
from bot.report.mdhtml import FILTERS
from bot.report.view import LABELS


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The reports' environment: bot.base.templating's settings and filters plus the report globals."""
    env = new_environment(labels=LABELS, marker=MARKER)
    env.filters.update(FILTERS)  # the HTML report's Markdown and breakable paths (bot.report.mdhtml)
    return env
