"""Which values are secret, and masking them out of text. The bottom layer: it imports nothing from bot, and it
never reads the process environment itself (a `main()` reads it once and passes the mapping in), so every caller
says which secrets it means and tests need no monkeypatching.

A value is secret when the variable's name looks like it holds one (KEY, TOKEN, SECRET, PASSWORD, PASSWD,
CREDENTIAL, DSN, DATABASE_URL, AUTH but not AUTHOR), including the Action's inputs (`INPUT_GITHUB-TOKEN`,
`INPUT_OPENAI-API-KEY`, `INPUT_DATABASE-URL`: hyphens read as underscores). Passwords inside URLs
(`postgresql://u:pw@host/db`, `http://u:pw@proxy`) and libpq `password=...` settings are secret in any
variable, since a driver's error message may quote them alone. Values shorter than MIN_SECRET_LEN characters are
ignored: masking every "1" or "true" would wreck reports and hide nothing worth hiding.

Masking covers a secret's encoded forms too (`secret_forms`): base64 (standard and URL-safe, padded and not, and
the characters it contributes at any of the three alignments inside a longer base64 text, as `user:token` is in a
Basic auth header), percent-encoding (`quote`, `quote_plus`, lower-case escapes) and hex. A derived form shorter
than MIN_ENCODED_LEN is not masked: a few base64 characters occur by chance. `redact_model` masks every string
a result model holds (a run read back from a child, a comparison before it is written); `scrub_rendered` masks a
rendered report, where a template may have escaped a secret (`ghp_x` is `ghp\\_x` in Markdown, `a&b` is
`a&amp;b` in HTML) and so looks for the escaped forms too."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, unquote

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

MASK = "***"
MIN_SECRET_LEN = 6
MIN_ENCODED_LEN = 8  # a derived form (base64, URL, hex) shorter than this is too likely to occur by chance
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|DSN|DATABASE_URL|AUTH(?!OR)", re.IGNORECASE
)
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:([^@/?#\s]+)@")
_KV_PASSWORD = re.compile(r"""\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)""", re.IGNORECASE)
_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")
_BASE64: tuple[Callable[[bytes], bytes], ...] = (base64.b64encode, base64.urlsafe_b64encode)


def is_secret_name(name: str) -> bool:
    """True for a variable whose value must never be shown (or handed to an agent unless named)."""
    return bool(_SECRET_NAME.search(name.replace("-", "_")))


def embedded_passwords(value: str) -> list[str]:
    """Passwords inside a value: a URL's `user:password@` (as written and percent-decoded) and libpq's
    `password=...` (unquoted)."""
    found: list[str] = []
    for m in _URL_PASSWORD.finditer(value):
        found += [m.group(1), unquote(m.group(1))]
    for m in _KV_PASSWORD.finditer(value):
        raw = m.group(1)
        found.append(raw[1:-1].replace("\\'", "'").replace("\\\\", "\\") if raw.startswith("'") else raw)
    return found


def secret_values(environ: Mapping[str, str], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The secrets of an environment plus `extra` (values the caller knows are secret, e.g. a token given as a
    flag), each with the passwords embedded in it; longest first, so a token is masked before any shorter secret
    inside it."""
    found: set[str] = set()
    for name, value in environ.items():
        if not value:
            continue
        if is_secret_name(name):
            found.add(value)
        found.update(embedded_passwords(value))
    for value in extra:
        if value:
            found.add(value)
            found.update(embedded_passwords(value))
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_LEN), key=lambda v: (-len(v), v)))


def _base64_forms(data: bytes) -> set[str]:
    """The whole encoding (padded and not), and for each byte offset 0-2 at which `data` may start inside a
    longer text, the base64 characters that depend on `data` alone (the partial characters at either edge,
    shared with the neighbouring bytes, left out)."""
    forms: set[str] = set()
    for encode in _BASE64:
        whole = encode(data).decode("ascii")
        forms.update({whole, whole.rstrip("=")})
        for shift in range(3):
            shifted = encode(b"\0" * shift + data).decode("ascii").rstrip("=")
            first = -(-8 * shift // 6)  # the first character whose six bits all lie in `data`
            end = 8 * (shift + len(data)) // 6  # one past the last such character
            forms.add(shifted[first:end])
    return forms


@lru_cache(maxsize=1024)
def encoded_forms(secret: str) -> tuple[str, ...]:
    """How `secret` looks once encoded (base64, percent-encoding, hex), itself left out; none for a secret
    shorter than MIN_SECRET_LEN, and none shorter than MIN_ENCODED_LEN."""
    if len(secret) < MIN_SECRET_LEN:
        return ()
    data = secret.encode("utf-8")
    forms = _base64_forms(data)
    for url in (quote(secret, safe=""), quote(secret), quote_plus(secret)):
        forms.update({url, _PERCENT_ESCAPE.sub(lambda m: m.group(0).lower(), url)})
    forms.update({data.hex(), data.hex().upper()})
    forms.discard(secret)
    return tuple(sorted((f for f in forms if len(f) >= MIN_ENCODED_LEN), key=lambda v: (-len(v), v)))


def secret_forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Every form to mask for `secrets`: each value (MIN_SECRET_LEN or longer) and its encoded forms, longest
    first. What `::add-mask::` is given, and what `scrub` replaces."""
    return _forms(tuple(sorted(set(secrets))))


@lru_cache(maxsize=64)
def _forms(secrets: tuple[str, ...]) -> tuple[str, ...]:
    found = {s for s in secrets if len(s) >= MIN_SECRET_LEN}
    for value in list(found):
        found.update(encoded_forms(value))
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def mask_forms(text: str, forms: Sequence[str]) -> str:
    """`text` with each of `forms` (already expanded, longest first: see `secret_forms`) replaced by MASK."""
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret, and every encoded form of one, replaced by MASK, longest first (a password
    inside a DSN does not leave the rest of the DSN readable). Secrets shorter than MIN_SECRET_LEN are skipped,
    whoever passed them."""
    if not text or not secrets:
        return text
    return mask_forms(text, secret_forms(secrets))


def scrub_optional(text: str | None, secrets: Sequence[str]) -> str | None:
    return None if text is None else scrub(text, secrets)


def _walk(value: Any, forms: Sequence[str]) -> Any:
    if isinstance(value, str):
        return mask_forms(value, forms)
    if isinstance(value, dict):
        return {_walk(k, forms): _walk(v, forms) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_walk(v, forms) for v in value)
    return value


def redact_model(model: M, secrets: Sequence[str]) -> M:
    """`model` with every secret (and encoded form of one) masked in every string it holds; the same object
    when none occurs (cheap check on its JSON first)."""
    forms = secret_forms(secrets)
    if not forms:
        return model
    dumped = model.model_dump_json()
    if not any(f in dumped or json_form(f) in dumped for f in forms):
        return model
    return type(model).model_validate(_walk(model.model_dump(), forms))


def json_form(secret: str) -> str:
    return json.dumps(secret)[1:-1]


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
