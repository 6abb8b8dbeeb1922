"""`--repeat K`, the answer cache, and `--shard` + `merge` on a real PostgreSQL, with the scripted agent of
tests/fixtures/flaky: `head` is right on 2 of 3 attempts of `items-flaky` and always wrong on `orders-broken`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.results import RunResult, read_run
from bot.cli import main
from bot.compare.comparison import compare_runs

pytestmark = pytest.mark.integration

FLAKY = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "flaky"
CASES = 9


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_dsn: str) -> None:
    """A fresh answer cache per test (pg_dsn first: an embedded server keeps its own data folder)."""
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)  # conftest turns it off for other tests


def run(pg_dsn: str, out: Path, agent: str, *extra: str) -> RunResult:
    argv = ["run", str(FLAKY), "--agent", f"python:{FLAKY / 'agent.py'}:{agent}", "--dsn", pg_dsn]
    assert main([*argv, "--out", str(out), "-q", *extra]) == 0
    return read_run(out)


def ids(changes) -> list[str]:
    return sorted(c.id for c in changes)


def test_a_flaky_agent_is_labelled_flaky_and_a_deterministic_break_regresses_at_k3(pg_dsn, tmp_path):
    base = run(pg_dsn, tmp_path / "base.json", "base", "--repeat", "3")
    head = run(pg_dsn, tmp_path / "head.json", "head", "--repeat", "3")
    assert base.meta.repeats == head.meta.repeats == 3
    flaky = {c.id: c for c in head.cases}["items-flaky"]
    assert [a.status for a in flaky.attempts] == ["passed", "failed", "passed"]
    assert (flaky.status, flaky.passes, flaky.repeats) == ("passed", 2, 3)  # the majority
    assert "ORDER BY price DESC" in flaky.attempts[1].sql
    broken = {c.id: c for c in head.cases}["orders-broken"]
    assert (broken.status, broken.passes, broken.repeats) == ("failed", 0, 3)
    assert all(c.passes == 3 for c in base.cases)

    comparison = compare_runs(base, head)
    assert ids(comparison.of("flaky")) == ["items-flaky"]
    assert ids(comparison.of("regressed")) == ["orders-broken"]
    assert comparison.verdict == "regressions"


def test_a_deterministic_break_regresses_at_k1(pg_dsn, tmp_path):
    base = run(pg_dsn, tmp_path / "base.json", "base")
    head = run(pg_dsn, tmp_path / "head.json", "head")
    assert head.meta.repeats == 1
    assert all(c.attempts == () and c.repeats == 1 for c in head.cases)
    comparison = compare_runs(base, head)
    assert ids(comparison.of("regressed")) == ["orders-broken"]
    assert comparison.of("flaky") == []  # attempt 0 of items-flaky is right
    assert comparison.verdict == "regressions"


def test_ties_between_attempts_go_to_the_worse_outcome(pg_dsn, tmp_path):
    head = run(pg_dsn, tmp_path / "head.json", "head", "--repeat", "2", "--id", "items-flaky")
    (flaky,) = head.cases
    assert [a.status for a in flaky.attempts] == ["passed", "failed"]
    assert (flaky.status, flaky.passes, flaky.repeats) == ("failed", 1, 2)
    assert flaky.reason  # the details are the failed attempt's


def test_answers_are_cached_per_attempt(pg_dsn, tmp_path):
    first = run(pg_dsn, tmp_path / "first.json", "head", "--repeat", "3")
    assert (first.meta.agent_calls, first.meta.cache_hits) == (3 * CASES, 0)
    again = run(pg_dsn, tmp_path / "again.json", "head", "--repeat", "3")
    assert (again.meta.agent_calls, again.meta.cache_hits) == (0, 3 * CASES)
    assert [(c.id, c.status, c.attempts) for c in again.cases] == [
        (c.id, c.status, c.attempts) for c in first.cases
    ]
    assert [c.answer_key for c in again.cases] == [c.answer_key for c in first.cases]
    assert again.meta.agent_fingerprint == first.meta.agent_fingerprint != ""
    other = run(pg_dsn, tmp_path / "base.json", "base", "--repeat", "3")  # another function: another agent
    assert other.meta.agent_fingerprint != first.meta.agent_fingerprint
    assert other.meta.agent_calls == 3 * CASES
    fresh = run(pg_dsn, tmp_path / "fresh.json", "head", "--repeat", "3", "--no-answer-cache")
    assert (fresh.meta.agent_calls, fresh.meta.cache_hits) == (3 * CASES, 0)


def test_the_config_can_turn_the_answer_cache_off(pg_dsn, tmp_path):
    config = tmp_path / "sqlcanary.yml"
    config.write_text("cache: {answers: false}\n")
    for name in ("one.json", "two.json"):
        again = run(pg_dsn, tmp_path / name, "head", "--config", str(config))
    assert (again.meta.agent_calls, again.meta.cache_hits) == (CASES, 0)


def test_gold_agent_answers_are_not_cached(pg_dsn, tmp_path):
    out = tmp_path / "gold.json"
    assert main(["run", str(FLAKY), "--dsn", pg_dsn, "--out", str(out), "-q"]) == 0
    assert main(["run", str(FLAKY), "--dsn", pg_dsn, "--out", str(out), "-q"]) == 0
    gold = read_run(out)
    assert (gold.meta.agent_calls, gold.meta.cache_hits) == (CASES, 0)
    assert not (tmp_path / "cache" / "answers").exists()


def comparable(run: RunResult) -> list[dict]:
    """A run's cases without timings (they differ from run to run)."""
    return [
        c.model_dump(mode="json", exclude={"timings": True, "prediction": {"duration_s"}}) for c in run.cases
    ]


def test_shards_merged_equal_the_unsharded_run(pg_dsn, tmp_path):
    whole = run(pg_dsn, tmp_path / "whole.json", "head", "--no-answer-cache")
    paths = []
    for i in (1, 2, 3):
        shard = run(pg_dsn, tmp_path / f"shard{i}.json", "head", "--shard", f"{i}/3", "--no-answer-cache")
        assert shard.meta.shard == f"{i}/3" and 0 < len(shard.cases) < CASES
        paths.append(str(tmp_path / f"shard{i}.json"))
    assert main(["merge", *reversed(paths), "--out", str(tmp_path / "merged.json")]) == 0
    merged = read_run(tmp_path / "merged.json")
    assert comparable(merged) == comparable(whole)
    assert [c.id for c in merged.cases] == [c.id for c in whole.cases]
    assert merged.summary == whole.summary
    assert merged.meta.shard is None and merged.meta.agent_calls == whole.meta.agent_calls == CASES
    assert (merged.meta.suite_hash, merged.meta.fixtures) == (whole.meta.suite_hash, whole.meta.fixtures)


def test_an_empty_shard_is_a_valid_run(pg_dsn, tmp_path):
    """More shards than cases: some shards hold nothing, and merging them all still gives the whole suite."""
    paths = []
    for i in range(1, 13):
        out = tmp_path / f"s{i}.json"
        assert main(["run", str(FLAKY), "--dsn", pg_dsn, "--out", str(out), "-q", "--shard", f"{i}/12"]) == 0
        paths.append(str(out))
    assert any(not read_run(p).cases for p in paths)
    assert main(["merge", *paths, "--out", str(tmp_path / "all.json")]) == 0
    assert len(read_run(tmp_path / "all.json").cases) == CASES
