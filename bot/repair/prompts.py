"""Chat messages for the repair loop, rendered from templates/prompts/repair_*.md.j2. Nothing from the
environment goes in, and values of secret-looking environment variables are masked should they appear."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from bot.repair.context import FailureContext
from bot.report.render import environment

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|DSN|DATABASE_URL", re.IGNORECASE)
MASK = "***"
MAX_FILE_NAMES = 80


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    return sorted(
        (v for k, v in env.items() if _SECRET_NAME.search(k) and v and len(v) >= 6), key=len, reverse=True
    )


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    for value in secret_values(environ):
        text = text.replace(value, MASK)
    return text


def _render(name: str, **context: object) -> str:
    return environment().get_template(f"prompts/{name}").render(**context).strip() + "\n"


def _messages(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": scrub(system)}, {"role": "user", "content": scrub(user)}]


def case_messages(
    ctx: FailureContext, *, globs: Sequence[str], files: Sequence[str], feedback: Sequence[str]
) -> list[dict]:
    """The request for one attempt at one case; `feedback` holds why each earlier attempt was rejected."""
    system = _render("repair_system.md.j2", globs=list(globs))
    shown = {e.file for e in ctx.excerpts}
    others = [f for f in files if f not in shown][:MAX_FILE_NAMES]
    user = _render("repair_case.md.j2", ctx=ctx, files=others, feedback=list(feedback))
    return _messages(system, user)


def critique_messages(
    *, diff: str, repaired: Sequence[str], globs: Sequence[str], feedback: Sequence[str]
) -> list[dict]:
    system = _render("repair_system.md.j2", globs=list(globs))
    user = _render("repair_critique.md.j2", diff=diff, repaired=list(repaired), feedback=list(feedback))
    return _messages(system, user)
