"""Chat messages for the repair loop, rendered from templates/prompts/repair_*.md.j2. Nothing from the
environment goes in, and secret values (bot.base.secrets) are masked should they appear.

`secrets` is the caller's list (Settings.secrets, read from the environment by `main()`); this module never reads
the environment itself."""

from __future__ import annotations

from collections.abc import Sequence

from bot.base.secrets import MASK, scrub, secret_values  # secret_values: re-exported
from bot.base.templating import environment
from bot.repair.actions import example
from bot.repair.context import FailureContext

__all__ = ["MASK", "case_messages", "critique_messages", "scrub", "secret_values"]
MAX_FILE_NAMES = 80


def _render(name: str, **context: object) -> str:
    return environment().get_template(f"prompts/{name}").render(**context).strip() + "\n"


def _messages(system: str, user: str, secrets: Sequence[str]) -> list[dict]:
    return [
        {"role": "system", "content": scrub(system, secrets)},
        {"role": "user", "content": scrub(user, secrets)},
    ]


def case_messages(
    ctx: FailureContext,
    *,
    globs: Sequence[str],
    files: Sequence[str],
    feedback: Sequence[str],
    secrets: Sequence[str] = (),
) -> list[dict]:
    """The request for one attempt at one case; `feedback` holds why each earlier attempt was rejected."""
    system = _render("repair_system.md.j2", globs=list(globs))
    shown = {e.file for e in ctx.excerpts}
    others = [f for f in files if f not in shown][:MAX_FILE_NAMES]
    example_action = None
    if ctx.example:
        file, _, line = ctx.example
        example_action = example(file, search=line, replace="<the corrected line>")
    user = _render(
        "repair_case.md.j2", ctx=ctx, files=others, feedback=list(feedback), example_action=example_action
    )
    return _messages(system, user, secrets)


def critique_messages(
    *,
    diff: str,
    repaired: Sequence[str],
    globs: Sequence[str],
    feedback: Sequence[str],
    secrets: Sequence[str] = (),
) -> list[dict]:
    system = _render("repair_system.md.j2", globs=list(globs))
    user = _render("repair_critique.md.j2", diff=diff, repaired=list(repaired), feedback=list(feedback))
    return _messages(system, user, secrets)
