"""bot.base.secrets: which values are secret (by variable name, inside URLs and DSNs, explicit extras) and masking
them; the repair prompts use the same scrubber."""

from __future__ import annotations

import pytest

from bot.base.secrets import MASK, embedded_passwords, is_secret_name, scrub, secret_values
from bot.repair.prompts import critique_messages

TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "PGPASSWORD",
        "DB_PASSWD",
        "GCP_CREDENTIALS",
        "SENTRY_DSN",
        "DATABASE_URL",
        "HTTP_AUTH",
        "INPUT_GITHUB-TOKEN",
        "INPUT_OPENAI-API-KEY",
        "INPUT_REPAIR-TOKEN",
        "INPUT_DATABASE-URL",
        "input_github-token",
    ],
)
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)
    assert secret_values({name: "value-long-enough"}) == ("value-long-enough",)


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "INPUT_MODE", "LANG"]
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)
    assert secret_values({name: "value-long-enough"}) == ()


def test_short_values_are_ignored_and_order_is_longest_first() -> None:
    env = {"A_TOKEN": "12345", "B_TOKEN": "abcdef", "C_KEY": "abcdefghij", "D_SECRET": ""}
    assert secret_values(env) == ("abcdefghij", "abcdef")


def test_passwords_inside_urls_and_dsns_are_secrets_in_any_variable() -> None:
    env = {
        "DATABASE_URL": "postgresql://app:s3cr%40t-pw@db.internal:5432/shop",
        "HTTPS_PROXY": "http://proxyuser:proxy-pass@proxy:3128",
        "PGQUOTED": "host=db user=app password='it\\'s quoted' dbname=shop",
        "LIBPQ": "host=db password=kv-password dbname=shop",
    }
    found = secret_values(env)
    assert env["DATABASE_URL"] in found
    assert "s3cr%40t-pw" in found and "s3cr@t-pw" in found  # as written and percent-decoded
    assert "proxy-pass" in found and env["HTTPS_PROXY"] not in found  # the proxy URL itself is not secret
    assert "kv-password" in found and "it's quoted" in found
    assert embedded_passwords("postgresql://nopassword@host/db") == []


def test_extras_are_added_with_their_embedded_passwords() -> None:
    found = secret_values({}, extra=["postgres://u:extra-pw@h/db", "tiny", ""])
    assert found == ("postgres://u:extra-pw@h/db", "extra-pw")


def test_scrub_masks_longest_first_and_skips_short_ones() -> None:
    dsn = "postgresql://app:hunter22@db/shop"
    text = f"cannot connect to {dsn} (password hunter22), token {TOKEN}, pin 1234"
    out = scrub(text, ["hunter22", dsn, TOKEN, "1234"])
    assert out == f"cannot connect to {MASK} (password {MASK}), token {MASK}, pin 1234"
    assert scrub(text, []) == text


def test_repair_prompts_mask_the_secrets_they_are_given() -> None:
    messages = critique_messages(
        diff=f"+ token: {TOKEN}\n", repaired=["c1"], globs=["kb/**"], feedback=[], secrets=(TOKEN,)
    )
    text = "\n".join(m["content"] for m in messages)
    assert TOKEN not in text and MASK in text
    unmasked = critique_messages(
        diff=f"+ token: {TOKEN}\n", repaired=["c1"], globs=[], feedback=[], secrets=()
    )
    assert TOKEN in unmasked[1]["content"]  # the control: without the secret the diff goes in as is
