"""Shards and merge without a database: the split is stable and complete, and merge refuses runs that do not
belong together (exit 2) and otherwise rebuilds the unsharded run's order, summary and meta."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.base.errors import SqlcanaryError
from bot.base.results import (
    CaseResult,
    LLMUsage,
    RunMeta,
    RunResult,
    RunSetting,
    read_run,
    summarize,
    write_run,
)
from bot.cases.selection import Shard, in_shard, parse_shard, shard_of
from bot.cli import main
from bot.run.merge import merge_runs, suite_order

REPO = Path(__file__).resolve().parents[2]
IDS = [f"case-{i:03d}" for i in range(300)] + ["shop-ads-cpc-by-region-q4", "ünïcode-id", "a b/c:d"]


@pytest.mark.parametrize(
    "text,expected",
    [("1/3", Shard(1, 3)), ("3/3", Shard(3, 3)), (" 2 / 4 ", Shard(2, 4)), ("1/1", Shard(1, 1))],
)
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected
    assert str(parse_shard(text)) == f"{expected.index}/{expected.count}"


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "a/b", "-1/3", "1/3/5", "", "1.5/3"])
def test_parse_shard_refuses_bad_values(text):
    with pytest.raises(SqlcanaryError) as err:
        parse_shard(text)
    assert err.value.exit_code == 2


def test_bad_shard_on_the_command_line_exits_2(capsys):
    flaky = REPO / "tests" / "fixtures" / "flaky"
    assert main(["run", str(flaky), "--agent", "gold", "--shard", "4/3", "-q"]) == 2
    assert "--shard" in capsys.readouterr().err


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8])
def test_every_case_lands_in_exactly_one_shard(count):
    for case_id in IDS:
        owners = [i for i in range(1, count + 1) if in_shard(case_id, Shard(i, count))]
        assert owners == [shard_of(case_id, count)]
    sizes = [sum(shard_of(c, count) == i for c in IDS) for i in range(1, count + 1)]
    assert sum(sizes) == len(IDS) and min(sizes) > 0


def test_shard_assignment_is_pinned_and_independent_of_the_process():
    """A stable hash (not Python's salted hash()): the same in another process with another hash seed."""
    expected = {"inline-count": 3, "items-flaky": 2, "orders-broken": 1, "orders-per-item": 1}
    assert {i: shard_of(i, 3) for i in expected} == expected
    code = "import json, sys; from bot.cases.selection import shard_of; print(json.dumps([shard_of(i, 7) for i in sys.argv[1:]]))"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code, *IDS], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(out.stdout) == [shard_of(i, 7) for i in IDS]


# --------------------------------------------------------------------------------------------------------------
# merge

SOURCES = {  # the loader's order: inline cases in suite.yml, then cases/*.yml by path, then by line
    "inline-1": "bench/suite.yml:9",
    "a-first": "bench/cases/a.yml:2",
    "a-second": "bench/cases/a.yml:10",
    "b-only": "bench/cases/b.yml:1",
    "sub-deep": "bench/cases/sub/c.yml:4",
}
ORDER = list(SOURCES)


def case(case_id: str, status: str = "passed") -> CaseResult:
    return CaseResult(
        id=case_id,
        status=status,
        category="query",
        tags=("t",),
        source=SOURCES.get(case_id),
        question=f"question of {case_id}",
    )


def run(ids: list[str], shard: str | None, **meta) -> RunResult:
    cases = tuple(case(i, "failed" if i == "b-only" else "passed") for i in ids)
    fields = dict(
        suite="bench",
        suite_hash="s1",
        suite_path="/work/bench",
        fixtures={"db": "f1"},
        agent="python:agent.py:answer",
        agent_fingerprint="a1",
        kb_fingerprint="k1",
        repeats=1,
        shard=shard,
        started_at="2026-01-01T00:00:00+00:00",
        duration_s=1.0,
        agent_calls=len(ids),
    )
    return RunResult(meta=RunMeta(**{**fields, **meta}), summary=summarize(cases), cases=cases)


def shards(**meta_of_third) -> list[tuple[str, RunResult]]:
    shard = meta_of_third.pop("shard", "3/3")
    return [
        (
            "s1.json",
            run(["b-only", "a-second"], "1/3", duration_s=4.0, started_at="2026-01-01T00:00:05+00:00"),
        ),
        ("s2.json", run(["sub-deep", "inline-1"], "2/3", cache_hits=2, agent_calls=0)),
        ("s3.json", run(["a-first"], shard, **meta_of_third)),
    ]


def test_merge_orders_cases_as_the_suite_does_and_recomputes_summary_and_meta():
    merged = merge_runs(shards())
    assert [c.id for c in merged.cases] == ORDER
    assert merged.summary == summarize(tuple(case(i, "failed" if i == "b-only" else "passed") for i in ORDER))
    assert (merged.summary.total, merged.summary.passed, merged.summary.failed) == (5, 4, 1)
    m = merged.meta
    assert m.shard is None and m.complete
    assert (m.agent_calls, m.cache_hits) == (2 + 0 + 1, 2)
    assert m.duration_s == 4.0  # the longest shard: shards run side by side
    assert m.started_at == "2026-01-01T00:00:00+00:00"
    assert (m.suite_hash, m.agent_fingerprint, m.fixtures) == ("s1", "a1", {"db": "f1"})


def test_merge_adds_up_the_shards_llm_usage_and_an_unknown_cost_stays_unknown():
    def usage(calls: int, cost: float | None) -> LLMUsage:
        return LLMUsage(
            model="m", calls=calls, prompt_tokens=10 * calls, completion_tokens=calls, cost_usd=cost
        )

    parts = shards(llm=usage(3, 0.5))
    parts[0] = (
        parts[0][0],
        parts[0][1].model_copy(update={"meta": parts[0][1].meta.model_copy(update={"llm": usage(2, 0.25)})}),
    )
    m = merge_runs(parts).meta
    assert m.llm is not None and (m.llm.calls, m.llm.prompt_tokens, m.llm.cost_usd) == (5, 50, 0.75)
    assert m.llm_judge is None  # no shard asked a judge
    parts[0] = (
        parts[0][0],
        parts[0][1].model_copy(update={"meta": parts[0][1].meta.model_copy(update={"llm": usage(2, None)})}),
    )
    assert merge_runs(parts).meta.llm.cost_usd is None  # a model without a price: the total is unknown


def test_merge_order_does_not_depend_on_how_a_run_named_the_suite():
    """Shards that ran from the repository root (relative sources), with absolute paths, or from the suite
    folder itself still sort into one suite order."""
    spellings = [lambda s: s, lambda s: "/work/" + s, lambda s: s.removeprefix("bench/")]
    mixed = [
        case(i).model_copy(update={"source": spellings[n % 3](SOURCES[i])})
        for n, i in enumerate(reversed(ORDER))
    ]
    assert [c.id for c in sorted(mixed, key=lambda c: suite_order(c, "/work/bench"))] == ORDER


def test_merge_keeps_fixtures_of_databases_only_some_shards_used():
    parts = shards(fixtures={"db": "f1", "other": "f9"})
    assert merge_runs(parts).meta.fixtures == {"db": "f1", "other": "f9"}


@pytest.mark.parametrize(
    "meta,words",
    [
        ({"suite_hash": "s2"}, "suite_hash differs"),
        ({"fixtures": {"db": "f2"}}, "fixture 'db' differs"),
        ({"evaluator_version": "0"}, "evaluator_version differs"),  # never the current version
        ({"preset": "bird"}, "preset differs"),
        ({"agent_fingerprint": "a2"}, "agent_fingerprint differs"),
        ({"kb_fingerprint": "k2"}, "kb_fingerprint differs"),
        ({"repeats": 3}, "repeats differs"),
        ({"filters": {"tags": ["x"]}}, "filters differs"),
        ({"setting": RunSetting(name="other")}, "setting differs"),
        ({"shard": None}, "not a shard"),
        ({"shard": "3/4"}, "the others of 3"),
        ({"shard": "2/3"}, "shard 2/3 is also in s2.json"),
    ],
)
def test_merge_refuses_runs_that_do_not_belong_together(meta, words):
    with pytest.raises(SqlcanaryError) as err:
        merge_runs(shards(**meta))
    assert err.value.exit_code == 2
    assert words in str(err.value)
    assert "s3.json" in str(err.value)


def test_merge_refuses_a_case_in_two_shards():
    parts = shards()
    parts[2] = ("s3.json", run(["a-first", "b-only"], "3/3"))
    with pytest.raises(SqlcanaryError, match=r"case 'b-only' is also in s1\.json"):
        merge_runs(parts)


def test_merge_refuses_missing_shards_unless_partial():
    parts = shards()[:2]
    with pytest.raises(SqlcanaryError, match=r"shard\(s\) 3 of 3 are missing"):
        merge_runs(parts)
    merged = merge_runs(parts, partial=True)
    assert [c.id for c in merged.cases] == ["inline-1", "a-second", "b-only", "sub-deep"]
    assert not merged.meta.complete


def test_merge_command_writes_the_merged_run_and_exits_2_on_refusal(tmp_path, capsys):
    paths = []
    for name, r in shards():
        write_run(tmp_path / name, r)
        paths.append(str(tmp_path / name))
    out = tmp_path / "merged.json"
    assert main(["merge", *paths, "--out", str(out)]) == 0
    assert [c.id for c in read_run(out).cases] == ORDER
    write_run(tmp_path / "s3.json", shards(preset="bird")[2][1])
    assert main(["merge", *paths, "--out", str(tmp_path / "again.json")]) == 2
    assert "preset differs" in capsys.readouterr().err
    assert not (tmp_path / "again.json").exists()
