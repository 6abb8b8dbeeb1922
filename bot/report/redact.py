"""Secrets out of reports, twice: in the subject before it is rendered, and in the text after.

Agents are scrubbed at their boundary already (bot.agents.base.scrub_answer), but a saved run may predate that,
or come from another machine with other secrets. Masking the subject first matters because the templates cut
long text (half a token is still a leak) and escape it (`ghp_x` is `ghp\\_x` in Markdown, `a&b` is `a&amp;b` in
HTML), so a token is no longer findable in the output. The pass over the final text is the backstop for
anything the templates add; it also looks for the escaped forms."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from bot.secrets import MIN_SECRET_LEN, scrub

M = TypeVar("M", bound=BaseModel)
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~])")


def _walk(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {_walk(k, secrets): _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_walk(v, secrets) for v in value)
    return value


def redact_model(model: M, secrets: Sequence[str]) -> M:
    """`model` with every secret masked in every string it holds; the same object when none occurs (cheap check
    on its JSON first)."""
    live = [s for s in secrets if len(s) >= MIN_SECRET_LEN]
    if not live:
        return model
    dumped = model.model_dump_json()
    if not any(s in dumped or _json_form(s) in dumped for s in live):
        return model
    return type(model).model_validate(_walk(model.model_dump(), live))


def _json_form(secret: str) -> str:
    return json.dumps(secret)[1:-1]


def _escaped_forms(secret: str) -> set[str]:
    """How a secret may look in rendered text: as is, JSON-escaped, HTML/XML-escaped (markupsafe's and the
    filters' spellings) and Markdown-escaped."""
    html = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    quoted = {
        html.replace('"', "&#34;").replace("'", "&#39;"),
        html.replace('"', "&quot;").replace("'", "&#x27;"),
    }
    markdown = {_MD_PUNCT.sub(r"\\\1", form) for form in (secret, html)}
    return {secret, _json_form(secret), html, *quoted, *markdown}


def scrub_rendered(text: str, secrets: Sequence[str]) -> str:
    """The final text of a report with every secret masked, in any of its escaped forms."""
    live = [s for s in secrets if len(s) >= MIN_SECRET_LEN]
    if not live or not text:
        return text
    return scrub(text, sorted({f for s in live for f in _escaped_forms(s)}, key=len, reverse=True))
