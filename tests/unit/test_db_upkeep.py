"""Template pruning, the limits a non-superuser can install, and where a dead DSN came from (no database)."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.db.inventory import PrunePolicy, TemplateInfo, to_prune
from bot.db.provision import dsn_source, unreachable_message
from bot.db.rolestate import LIMITS, RoleState, limits_for

NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
GIB = 1024**3


def _t(name: str, days_ago: float | None, size: int = 100) -> TemplateInfo:
    return TemplateInfo(name, size, None if days_ago is None else NOW - dt.timedelta(days=days_ago))


def test_templates_unused_past_the_age_are_pruned_but_never_one_in_use():
    found = [_t("old", 40), _t("older-in-use", 90), _t("fresh", 1), _t("unknown", None)]
    assert to_prune(found, PrunePolicy(max_age_days=30), keep={"older-in-use"}, now=NOW) == ["old"]


def test_past_the_total_size_the_least_recently_used_go_first():
    found = [_t("a", 3, 2 * GIB), _t("b", 2, 2 * GIB), _t("c", 1, 2 * GIB), _t("d", 5, 2 * GIB)]
    policy = PrunePolicy(max_age_days=30, max_total_bytes=5 * GIB)
    assert to_prune(found, policy, keep={"d"}, now=NOW) == ["a", "b"]


def test_a_non_superuser_cannot_set_temp_file_limit_and_the_role_check_knows():
    assert limits_for(True) == LIMITS
    assert [k for k, _ in limits_for(False)] == ["statement_timeout", "idle_in_transaction_session_timeout"]
    settings = ("\x1fstatement_timeout=120s\x1fidle_in_transaction_session_timeout=300s",)
    managed = RoleState(False, None, settings, (), (), (), limits_for(False))
    assert managed.off(True) == []
    assert RoleState(False, None, settings, (), (), ()).off(True) != []  # a superuser's role has all three


@pytest.mark.parametrize(
    ("cli", "env", "config", "want"),
    [
        ("postgresql://a", "postgresql://b", None, "--dsn"),
        (None, "postgresql://b", "postgresql://c", "DATABASE_URL"),
        (None, None, "postgresql://c", "`dsn:` in sqlcanary.yml"),
        (None, None, None, None),
    ],
)
def test_the_source_of_the_dsn(cli, env, config, want):
    assert dsn_source(cli, env, config) == want


def test_a_refused_connection_names_the_source_the_address_and_the_fix():
    exc = Exception(
        'connection to server at "10.0.0.5", port 5433 failed: Connection refused\n\tIs the server'
    )
    text = unreachable_message("postgresql://u:secret@10.0.0.5:5433/db", exc, "DATABASE_URL")
    assert text.startswith("DATABASE_URL points at 10.0.0.5:5433, which refused the connection")
    assert "secret" not in text and "unset DATABASE_URL to use the embedded server" in text


def test_without_a_known_source_all_three_places_are_named():
    exc = Exception('could not translate host name "nowhere" to address')
    text = unreachable_message("host=nowhere dbname=x", exc, None)
    assert "from --dsn, DATABASE_URL or `dsn:` in the config" in text and "nowhere:5432" in text
    assert "does not resolve" in text
