"""The Jinja environment for everything rendered from `templates/`: reports (bot.report adds its globals) and
LLM prompts (bot.agents.llm, bot.scoring.llm_judge, bot.repair). A bottom-layer module, so that the layers that
render prompts need not import bot.report (ARCHITECTURE.md, import direction)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)

from bot.base.textfilters import FILTERS, clean


def _loaders() -> list[BaseLoader]:
    loaders: list[BaseLoader] = []
    source = Path(__file__).resolve().parents[2] / "templates"
    if (source / "comment.md.j2").is_file():  # a source tree: edit a template, see it at once
        loaders.append(FileSystemLoader(source))
    try:  # the wheel: templates/ packaged as bot/templates
        loaders.append(PackageLoader("bot", "templates"))
    except ValueError:
        pass
    return loaders


def new_environment(**globals_: object) -> Environment:
    """A fresh environment with sqlcanary's settings and filters; `globals_` are added to its globals. Callers
    that render often keep one (see `environment`): Jinja caches compiled templates per environment."""
    env = Environment(
        loader=ChoiceLoader(_loaders()),
        undefined=StrictUndefined,
        autoescape=select_autoescape(("html", "xml", "html.j2", "xml.j2"), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=clean,
    )
    env.filters.update(FILTERS)
    env.globals.update(globals_)
    return env


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The shared environment for prompts and the repair report (no report globals)."""
    return new_environment()


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def tidy_markdown(text: str) -> str:
    """Collapse runs of blank lines outside fenced code (the templates favour readability over whitespace)."""
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence:
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and not line[m.end() :].strip()
            ):
                fence = ""
        elif m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
            fence = m.group(1)
        elif not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"
