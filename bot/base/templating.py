"""The Jinja environment for everything rendered from `templates/`: reports (bot.report adds its globals) and
LLM prompts (bot.agents.llm, bot.scoring.llm_judge, bot.repair). A bottom-layer module, so that the layers that
render prompts need not import bot.report (ARCHITECTURE.md, import direction)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from jinja2 import FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.sandbox import ImmutableSandboxedEnvironment

from bot.base.textfilters import FILTERS, clean

# This module's own package (bot/), wherever it was imported from: never the current folder, a config's path or
# anything else a checked-out pull request can name.
_PACKAGE = Path(__file__).resolve().parents[1]


def _is_source_tree(root: Path) -> bool:
    """`root` is a sqlcanary checkout (bot/ beside templates/ and the pyproject.toml that packages them)."""
    try:
        pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r'(?m)^name = "sqlcanary"$', pyproject) is not None


@functools.lru_cache(maxsize=1)
def templates_dir() -> Path:
    """The folder of the templates this sqlcanary ships: bot/templates in the installed wheel, else (a source
    checkout or an editable install) the templates/ beside this bot/ package. Found from this module's own
    location only, so a pull request's checkout (the current folder) can never put a template in its place."""
    packaged = _PACKAGE / "templates"
    if packaged.is_dir():
        return packaged
    source = _PACKAGE.parent / "templates"
    if source.is_dir() and _is_source_tree(_PACKAGE.parent):
        return source
    raise RuntimeError(
        f"sqlcanary's templates are missing: neither {packaged} nor {source} (reinstall sqlcanary)"
    )


def new_environment(**globals_: object) -> ImmutableSandboxedEnvironment:
    """A fresh environment with sqlcanary's settings and filters; `globals_` are added to its globals. Callers
    that render often keep one (see `environment`): Jinja caches compiled templates per environment.

    Templates are code: they are loaded only from `templates_dir()`, and rendered in Jinja's immutable sandbox,
    so even a template can neither reach Python internals nor change the objects it is given. The finalizer
    (`clean`) makes every `{{ ... }}` inert: no invalid character, bidi and zero-width controls shown escaped."""
    env = ImmutableSandboxedEnvironment(
        loader=FileSystemLoader(templates_dir()),
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
def environment() -> ImmutableSandboxedEnvironment:
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
