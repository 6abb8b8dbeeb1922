"""A malformed DSN (from --dsn, DATABASE_URL or `dsn:` in the config) is a known failure, exit 2, whose message
names the redacted input and what is wrong; no password ever reaches the output. No database is touched: the
DSN is refused before any connection attempt. Also the SCRAM verifier given to the runner role."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from bot.base.errors import DatabaseError
from bot.cli import main
from bot.db.provision import check_dsn, provision, redact
from bot.db.role import scram_verifier, verifier_matches

SECRET = "hunter2xyz"

BAD = [
    # (dsn, fragments the message must hold)
    ("not a dsn", ["'not a dsn'", "keyword=value", '"not"']),
    ("foo=bar", ["'foo=bar'", 'invalid connection option "foo"']),
    ("host=db port=abc", ["'host=db port=abc'", "port 'abc' is not a number"]),
    ("host=db port=5432,x", ["port 'x'"]),
    (f"postgresql://u:{SECRET}@db:abc/shop", ["postgresql://u:***@db:abc/shop", "port 'abc'"]),
    (f"postgresql://u:{SECRET}@db:99999/shop", ["port '99999'"]),
    ("postgres://u@db/shop?port=x", ["port 'x'"]),
    (
        f"mysql://u:{SECRET}@db/shop",
        ["mysql://u:***@db/shop", "must start with postgresql://", "not mysql://"],
    ),
    (f"http://u:{SECRET}@db/shop", ["not http://"]),
    (f"host='db password={SECRET}", ["unterminated quoted string", "password=***"]),
    (f"postgresql://u:{SECRET}%ZZ@db/shop", ["invalid percent-encoded token", '"***"']),
    ("postgresql://db/shop?foo=1", ['invalid URI query parameter: "foo"']),
    (f"jdbc:postgresql://u:{SECRET}@db/shop", ["jdbc:postgresql://u:***@db/shop", "keyword=value"]),
    ("   ", ["blank"]),
]


@pytest.mark.parametrize(("dsn", "fragments"), BAD, ids=[b[0] for b in BAD])
def test_malformed_dsn_is_refused_with_a_message_naming_it(dsn, fragments):
    with pytest.raises(DatabaseError) as info:
        provision(dsn=dsn)  # refused before any connection: no server is needed
    message = str(info.value)
    assert info.value.exit_code == 2
    for fragment in fragments:
        assert fragment in message, message
    assert SECRET not in message


@pytest.mark.parametrize(
    "dsn",
    [
        "host=localhost port=5432 dbname=x user=postgres",
        "postgresql://u:pw@localhost:5432/x?sslmode=disable",
        "postgres:///x?host=/tmp",
        "host=a,b port=5432,5433",
        "postgresql://postgres:@/postgres?host=/root/.cache/sqlcanary/pg18",
    ],
)
def test_well_formed_dsn_passes_the_check(dsn):
    check_dsn(dsn)


def test_a_bad_option_value_is_reported_at_connect():
    # libpq accepts `sslmode=bogus` when parsing and refuses it at connect time; no server is reached either way.
    with pytest.raises(DatabaseError, match=r"invalid sslmode value: \"bogus\"") as info:
        provision(dsn=f"host=/nonexistent sslmode=bogus password={SECRET}")
    assert "password=***" in str(info.value) and SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        (f"postgresql://u:{SECRET}@h/db", "postgresql://u:***@h/db"),
        (f"host=h password={SECRET} user=u", "host=h password=*** user=u"),
        (f"host=h password = '{SECRET} x' user=u", "host=h password = *** user=u"),
        (f"postgresql://h/db?password={SECRET}", "postgresql://h/db?password=***"),
        ("host=h user=u", "host=h user=u"),
    ],
)
def test_redact(dsn, shown):
    assert redact(dsn) == shown


@pytest.mark.parametrize(
    ("where", "value"),
    [("--dsn", "not a dsn"), ("DATABASE_URL", f"mysql://u:{SECRET}@db/x"), ("config", "host=db port=abc")],
)
def test_cli_exits_2_for_a_bad_dsn_from_each_source(where, value, tmp_path, monkeypatch, capsys):
    """--dsn, DATABASE_URL and `dsn:` in sqlcanary.yml all reach the same check."""
    suite = tmp_path / "suite.yml"
    suite.write_text("databases: {d: f.sql}\ncases: [{id: a, question: q, gold_sql: SELECT 1}]\n")
    (tmp_path / "f.sql").write_text("SELECT 1;\n")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    argv = ["run", str(suite), "--out", str(tmp_path / "run.json"), "-q"]
    if where == "--dsn":
        argv += ["--dsn", value]
    elif where == "DATABASE_URL":
        monkeypatch.setenv("DATABASE_URL", value)
    else:
        config = tmp_path / "sqlcanary.yml"
        config.write_text(f"dsn: '{value}'\n")
        argv += ["--config", str(config)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "invalid PostgreSQL DSN" in err and "Traceback" not in err
    assert SECRET not in err


def test_scram_verifier_follows_rfc_7677():
    """The known-answer vector of RFC 7677 (user/pencil): its ServerSignature is derived from our ServerKey and
    StoredKey's ClientKey, so a wrong derivation cannot pass."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    verifier = scram_verifier("pencil", salt=salt)
    head, keys = verifier.split("$")[1:]
    assert head == "4096:W22ZaJ0SNY7soEsUEjb6gQ=="
    stored_key, server_key = (base64.b64decode(k) for k in keys.split(":"))
    auth = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    server_signature = hmac.new(server_key, auth, hashlib.sha256).digest()
    assert base64.b64encode(server_signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client_signature = hmac.new(stored_key, auth, hashlib.sha256).digest()
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == stored_key
    assert verifier_matches(verifier, "pencil")
    assert not verifier_matches(verifier, "pencil2")
    assert not verifier_matches(None, "pencil") and not verifier_matches("md5" + "0" * 32, "pencil")
