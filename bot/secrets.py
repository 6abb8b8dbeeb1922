"""Which values are secret, and masking them out of text. The bottom layer: it imports nothing from bot, and it
never reads the process environment itself (a `main()` reads it once and passes the mapping in), so every caller
says which secrets it means and tests need no monkeypatching.

A value is secret when the variable's name looks like it holds one (KEY, TOKEN, SECRET, PASSWORD, PASSWD,
CREDENTIAL, DSN, DATABASE_URL, AUTH but not AUTHOR), including the Action's inputs (`INPUT_GITHUB-TOKEN`,
`INPUT_OPENAI-API-KEY`, `INPUT_DATABASE-URL`: hyphens read as underscores). Passwords inside URLs
(`postgresql://u:pw@host/db`, `http://u:pw@proxy`) and libpq `password=...` settings are secret in any
variable, since a driver's error message may quote them alone. Values shorter than MIN_SECRET_LEN characters are
ignored: masking every "1" or "true" would wreck reports and hide nothing worth hiding."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote

MASK = "***"
MIN_SECRET_LEN = 6
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|DSN|DATABASE_URL|AUTH(?!OR)", re.IGNORECASE
)
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:([^@/?#\s]+)@")
_KV_PASSWORD = re.compile(r"""\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)""", re.IGNORECASE)


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


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced by MASK, longest first (a password inside a DSN does not leave the rest
    of the DSN readable). Secrets shorter than MIN_SECRET_LEN are skipped, whoever passed them."""
    if not text or not secrets:
        return text
    for value in sorted((s for s in set(secrets) if len(s) >= MIN_SECRET_LEN), key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def scrub_optional(text: str | None, secrets: Sequence[str]) -> str | None:
    return None if text is None else scrub(text, secrets)
