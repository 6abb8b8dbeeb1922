"""A secret is masked in its encoded forms too (bot.base.secrets.secret_forms): base64 (standard and URL-safe, padded
and not, and inside a longer base64 text at any byte offset), percent-encoding and hex; by `scrub`, by the report
redaction (subject and rendered text) and in the `::add-mask::` lines. Derived forms of short values are not
masked: they would occur by chance."""

from __future__ import annotations

import base64
import binascii
import itertools
from urllib.parse import quote, quote_plus

import pytest

from bot.base.results import Prediction
from bot.base.secrets import (
    MASK,
    MIN_ENCODED_LEN,
    encoded_forms,
    redact_model,
    scrub,
    scrub_rendered,
    secret_forms,
    secret_values,
)
from bot.github.workflow import add_mask

TOKEN = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
URL_PW = "p@ss w/rd+&?x=1"  # every character percent-encoding touches


def _core(secret: bytes, shift: int, encode=base64.b64encode) -> str:
    """What `secret` contributes to a base64 text when it starts `shift` bytes into a 3-byte group, worked out
    independently of the code under test: the characters two different prefixes agree on."""
    a = encode(b"\x00" * shift + secret + b"\x00\x00").decode().rstrip("=")
    b = encode(b"\xff" * shift + secret + b"\xff\xff").decode().rstrip("=")
    same = [x if x == y else None for x, y in zip(a, b, strict=True)]
    chars = "".join(c or "\0" for c in same).strip("\0")
    assert "\0" not in chars
    return chars


def _windows(text: str, width: int = MIN_ENCODED_LEN) -> set[str]:
    return {text[i : i + width] for i in range(len(text) - width + 1)}


@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_base64_of_the_secret_is_masked_padded_or_not(encode) -> None:
    whole = encode(TOKEN.encode()).decode()
    for form in (whole, whole.rstrip("=")):
        masked = scrub(f"Authorization: Basic {form}.", [TOKEN])
        assert masked == f"Authorization: Basic {MASK}."


@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
@pytest.mark.parametrize("before,after", list(itertools.product(range(7), range(4))))
def test_base64_of_a_longer_text_holding_the_secret_at_any_offset_is_masked(
    encode, before: int, after: int
) -> None:
    blob = encode(bytes(range(200, 200 + before)) + TOKEN.encode() + b"\x01\x02\x03"[:after]).decode()
    masked = scrub(f"x={blob};", [TOKEN])
    assert MASK in masked
    core = _core(TOKEN.encode(), before % 3, encode)
    assert not _windows(core) & _windows(masked), masked  # nothing of the token is left but an edge character


def test_the_basic_auth_header_git_sends_is_masked() -> None:
    header = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert scrub(f"AUTHORIZATION: basic {header}", [TOKEN]).count(MASK) == 1
    assert not _windows(_core(TOKEN.encode(), len("x-access-token:") % 3)) & _windows(scrub(header, [TOKEN]))


def test_percent_encoded_forms_are_masked() -> None:
    for form in (quote(URL_PW, safe=""), quote(URL_PW), quote_plus(URL_PW), quote(URL_PW, safe="").lower()):
        assert scrub(f"https://u:{form}@host/", [URL_PW]) == f"https://u:{MASK}@host/", form


def test_hex_forms_are_masked() -> None:
    raw = TOKEN.encode()
    text = f"{binascii.hexlify(raw).decode()} {raw.hex().upper()}"
    assert scrub(text, [TOKEN]) == f"{MASK} {MASK}"


def test_secret_values_stay_the_values_and_forms_add_the_encodings_longest_first() -> None:
    env = {"GITHUB_TOKEN": TOKEN, "PATH": "/usr/bin"}
    assert secret_values(env) == (TOKEN,)
    forms = secret_forms(secret_values(env))
    assert [len(f) for f in forms] == sorted((len(f) for f in forms), reverse=True)
    assert TOKEN in forms and base64.b64encode(TOKEN.encode()).decode() in forms
    assert all(len(f) >= MIN_ENCODED_LEN for f in forms)


def test_short_values_derive_nothing_that_could_occur_by_chance() -> None:
    assert encoded_forms("12345") == ()  # below MIN_SECRET_LEN: not a secret at all
    assert all(len(f) >= MIN_ENCODED_LEN for f in encoded_forms("abcdef"))
    text = "SELECT name FROM customers WHERE city = 'Paris' -- YWJj 616263 abc%20def"
    assert scrub(text, ["abcdef", "123456"]) == text  # nothing in ordinary text is a derived form


def test_the_report_redaction_masks_encoded_forms_in_the_subject_and_the_rendered_text() -> None:
    urlsafe = base64.urlsafe_b64encode(b"\xfb\xff" + TOKEN.encode()).decode()
    prediction = Prediction(sql=f"SELECT '{urlsafe}'", stderr=f"token={quote(TOKEN)}")
    masked = redact_model(prediction, [TOKEN])
    assert TOKEN not in masked.model_dump_json() and quote(TOKEN) not in (masked.stderr or "")
    assert not _windows(_core(TOKEN.encode(), 2, base64.urlsafe_b64encode)) & _windows(masked.sql or "")
    # Markdown escapes `_`, HTML escapes nothing of base64: both spellings are found in the rendered text.
    b64 = base64.urlsafe_b64encode(TOKEN.encode()).decode()
    md = b64.replace("_", "\\_")
    assert scrub_rendered(f"| {md} | <td>{b64}</td>", [TOKEN]) == f"| {MASK} | <td>{MASK}</td>"


def test_add_mask_lines_cover_every_form() -> None:
    lines = [line for form in secret_forms([TOKEN]) for line in add_mask(form)]
    assert f"::add-mask::{TOKEN}" in lines
    assert f"::add-mask::{base64.b64encode(TOKEN.encode()).decode()}" in lines
    assert f"::add-mask::{_core(TOKEN.encode(), 1)}" in lines
