"""Secrets out of reports, twice: in the subject before it is rendered, and in the text after.

Agents are scrubbed at their boundary already (bot.agents.base.scrub_answer), but a saved run may predate that,
or come from another machine with other secrets. Masking the subject first matters because the templates cut
long text (half a token is still a leak) and escape it (`ghp_x` is `ghp\\_x` in Markdown, `a&b` is `a&amp;b` in
HTML), so a token is no longer findable in the output. The pass over the final text is the backstop for
anything the templates add; it also looks for the escaped forms. Each secret's encoded forms (base64, URL, hex:
bot.base.secrets.secret_forms) are masked the same way as the secret itself; the subject by
bot.base.secrets.redact_model, which also masks a run or comparison once, where it is read."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.base.secrets import json_form, mask_forms, secret_forms

_MD_PUNCT = re.compile(r"([\\`*_\[\]|~])")


def _escaped_forms(secret: str) -> set[str]:
    """How a secret may look in rendered text: as is, JSON-escaped, HTML/XML-escaped (markupsafe's and the
    filters' spellings) and Markdown-escaped."""
    html = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    quoted = {
        html.replace('"', "&#34;").replace("'", "&#39;"),
        html.replace('"', "&quot;").replace("'", "&#x27;"),
    }
    markdown = {_MD_PUNCT.sub(r"\\\1", form) for form in (secret, html)}
    return {secret, json_form(secret), html, *quoted, *markdown}


def scrub_rendered(text: str, secrets: Sequence[str]) -> str:
    """The final text of a report with every secret masked, in any of its encoded and escaped forms."""
    forms = secret_forms(secrets)
    if not forms or not text:
        return text
    return mask_forms(text, sorted({e for f in forms for e in _escaped_forms(f)}, key=len, reverse=True))
