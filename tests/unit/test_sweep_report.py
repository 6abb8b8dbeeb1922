"""The sweep report's numbers on crafted runs: shards merged per setting (refused when one is missing or twice,
naming the setting), pass rates overall / per category / per tag, cases won and lost against the first setting,
McNemar over paired attempts, pass@k and pass^k, LLM calls, tokens and cost added up over shards, latency
percentiles; and the Markdown / HTML / JSON renderings (hostile names escaped, a chart per metric)."""

from __future__ import annotations

import json
from math import comb

import pytest

from bot.base.errors import SqlcanaryError
from bot.base.results import (
    Attempt,
    CaseResult,
    LLMUsage,
    RunMeta,
    RunResult,
    RunSetting,
    summarize,
    write_run,
)
from bot.base.stats import mcnemar_two_sided
from bot.cases.selection import shard_of
from bot.cli import main
from bot.sweep.metrics import pass_at_k, pass_hat_k, percentile
from bot.sweep.outputs import sweep_report
from bot.sweep.render import metric_charts, render_html, render_json, render_markdown, render_summary
from bot.sweep.report import SweepReport

IDS = [f"c{i}" for i in range(8)]
CATEGORY = {i: ("join" if n % 2 else "agg") for n, i in enumerate(IDS)}


def case(case_id: str, outcomes: list[bool], agent_s: float = 1.0) -> CaseResult:
    attempts = tuple(Attempt(status="passed" if ok else "failed") for ok in outcomes)
    passes = sum(outcomes)
    status = "passed" if passes * 2 > len(outcomes) else "failed"  # majority, ties to the worse
    return CaseResult(
        id=case_id,
        status=status,
        category=CATEGORY.get(case_id, "agg"),
        tags=("hard",) if case_id in ("c0", "c1") else (),
        attempts=attempts if len(outcomes) > 1 else (),
        timings={"agent_s": agent_s, "eval_s": 0.01},
        source=f"bench/cases/all.yml:{IDS.index(case_id) + 1 if case_id in IDS else 99}",
    )


def run(
    name: str,
    index: int,
    outcomes: dict[str, list[bool]],
    *,
    shard: str | None = None,
    llm: LLMUsage | None = None,
    latency: dict[str, float] | None = None,
) -> RunResult:
    repeats = len(next(iter(outcomes.values())))
    cases = tuple(case(i, o, (latency or {}).get(i, 1.0)) for i, o in outcomes.items())
    meta = RunMeta(
        suite="bench",
        suite_hash="s1",
        suite_path="bench",
        agent="llm",
        agent_fingerprint=f"fp-{name}",
        repeats=repeats,
        shard=shard,
        llm=llm,
        setting=RunSetting(name=name, index=index, model=f"model-{name}", temperature=0.0, repeat=repeats),
    )
    return RunResult(meta=meta, summary=summarize(cases), cases=cases)


def sharded(
    name: str, index: int, outcomes: dict[str, list[bool]], n: int = 2, **kw
) -> list[tuple[str, RunResult]]:
    out = []
    for i in range(1, n + 1):
        part = {k: v for k, v in outcomes.items() if shard_of(k, n) == i}
        usage = LLMUsage(
            model=f"model-{name}", calls=10 * i, prompt_tokens=100 * i, completion_tokens=i, cost_usd=0.5
        )
        out.append(
            (f"{name}/shard-{i}-of-{n}.json", run(name, index, part, shard=f"{i}/{n}", llm=usage, **kw))
        )
    return out


# first: c0..c3 pass, c4..c7 fail; second: c0 c1 fail (lost), c4 c5 c6 pass (won)
FIRST = {i: [n < 4] for n, i in enumerate(IDS)}
SECOND = {i: [n in (2, 3, 4, 5, 6)] for n, i in enumerate(IDS)}


def test_shards_merge_per_setting_and_the_table_compares_with_the_first_setting():
    assert {shard_of(i, 2) for i in IDS} == {1, 2}  # both shards hold cases
    runs = sharded("second", 2, SECOND) + sharded("first", 1, FIRST)  # files in any order: the grid's wins
    report = sweep_report(runs)
    first, second = report.settings
    assert (report.first, first.name, second.name) == ("first", "first", "second")
    assert (first.total, first.passed, first.pass_rate) == (8, 4, 0.5)
    assert (second.passed, second.pass_rate) == (5, 5 / 8)
    assert first.by_category == {"agg": 0.5, "join": 0.5}  # agg: c0 c2 c4 c6
    assert second.by_category == {"agg": 3 / 4, "join": 2 / 4}
    assert (first.by_tag, second.by_tag) == ({"hard": 1.0}, {"hard": 0.0})
    v = second.versus_first
    assert first.versus_first is None and v is not None
    assert (v.compared, v.won, v.lost) == (8, 3, 2)
    assert (set(v.won_ids), set(v.lost_ids)) == ({"c4", "c5", "c6"}, {"c0", "c1"})
    assert (v.discordant_first_passed, v.discordant_this_passed) == (2, 3)
    assert v.mcnemar_p == pytest.approx(mcnemar_two_sided(2, 3)) == pytest.approx(1.0)
    assert (second.llm_calls, second.tokens, second.cost_usd) == (30, 300 + 3, 1.0)  # both shards added
    assert second.files == 2 and first.model == "model-first"
    assert not report.repeated and first.pass_at_k is None


def test_repeated_settings_get_pass_at_k_pass_hat_k_and_mcnemar_over_paired_attempts():
    k3 = {
        "c0": [True, True, True],
        "c1": [True, False, False],
        "c2": [False, False, False],
        "c3": [True, True, False],
    }
    worse = {
        "c0": [True, False, True],
        "c1": [False, False, False],
        "c2": [False, False, False],
        "c3": [False] * 3,
    }
    report = sweep_report([("a.json", run("a", 1, k3)), ("b.json", run("b", 2, worse))])
    a, b = report.settings
    assert report.repeated and a.repeat == 3
    assert a.pass_at_k == pytest.approx((1 + 1 + 0 + 1) / 4)  # any of the 3
    assert a.pass_hat_k == pytest.approx((1 + 0 + 0 + 0) / 4)  # all of the 3
    assert b.pass_at_k == pytest.approx(1 / 4) and b.pass_hat_k == pytest.approx(0.0)
    v = b.versus_first
    assert v is not None
    # attempts paired by position: c0 (T,T,T)/(T,F,T): b=1; c1 (T,F,F)/(F,F,F): b=1; c3 (T,T,F)/(F,F,F): b=2
    assert (v.discordant_first_passed, v.discordant_this_passed) == (4, 0)
    assert v.mcnemar_p == pytest.approx(2 * 0.5**4)
    assert (v.won, v.lost, v.lost_ids) == (0, 1, ("c3",))  # by the majority status: c0 still passes (2 of 3)


def test_pass_at_k_and_pass_hat_k_estimators():
    assert pass_at_k(5, 2, 1) == pytest.approx(2 / 5)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - comb(3, 2) / comb(5, 2))
    assert pass_hat_k(5, 2, 2) == pytest.approx(comb(2, 2) / comb(5, 2))
    assert pass_at_k(3, 0, 3) == 0.0 and pass_hat_k(3, 3, 3) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_latency_percentiles():
    assert percentile([], 0.5) is None
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == pytest.approx(2.5)
    assert percentile([float(i) for i in range(1, 101)], 0.95) == pytest.approx(95.05)
    lat = {i: float(n + 1) for n, i in enumerate(IDS)}  # 1..8 s
    report = sweep_report([("a.json", run("a", 1, FIRST, latency=lat))])
    assert report.settings[0].latency_p50_s == pytest.approx(4.5)
    assert report.settings[0].latency_p95_s == pytest.approx(7.65)


def test_a_missing_or_duplicated_shard_is_refused_naming_the_setting():
    parts = sharded("first", 1, FIRST) + sharded("second", 2, SECOND)
    with pytest.raises(
        SqlcanaryError, match=r"setting 'second': cannot merge: shard\(s\) 2 of 2 are missing"
    ) as err:
        sweep_report(parts[:3])
    assert err.value.exit_code == 2
    with pytest.raises(SqlcanaryError, match=r"shard 1/2 is also in second/shard-1-of-2\.json"):
        sweep_report([*parts, ("copy/second/shard-1-of-2.json", parts[2][1])])


def test_a_run_that_records_no_setting_or_another_suite_is_refused():
    plain = run("a", 1, FIRST)
    plain = plain.model_copy(update={"meta": plain.meta.model_copy(update={"setting": None})})
    with pytest.raises(SqlcanaryError, match="not a sweep leg's run"):
        sweep_report([("plain.json", plain)])
    other = run("b", 2, FIRST)
    other = other.model_copy(update={"meta": other.meta.model_copy(update={"suite_hash": "s2"})})
    with pytest.raises(SqlcanaryError, match="setting 'b' ran another suite than 'a'"):
        sweep_report([("a.json", run("a", 1, FIRST)), ("b.json", other)])


def test_renderings_escape_hostile_names_and_draw_a_chart_per_metric():
    hostile = "<img src=x onerror=alert(1)>|@admin #1"
    a = run("a", 1, FIRST, llm=LLMUsage(calls=3, prompt_tokens=10, completion_tokens=2, cost_usd=None))
    b = run("b", 2, SECOND)
    b = b.model_copy(
        update={"cases": tuple(c.model_copy(update={"id": hostile}) if c.id == "c4" else c for c in b.cases)}
    )
    a = a.model_copy(
        update={"cases": tuple(c.model_copy(update={"id": hostile}) if c.id == "c4" else c for c in a.cases)}
    )
    report = sweep_report([("a.json", a), ("b.json", b)])
    md = render_markdown(report)
    assert "| `a` | `model-a` |" in md and "50.0%" in md and "62.5%" in md
    assert "`<img src=x onerror=alert(1)>\\|@admin #1`" in md  # only ever inside a code span: inert
    assert md.count("<img") == 1
    assert "### Pass rate by category" in md and "### Pass rate by tag" in md
    html = render_html(report)
    assert "<img src=x" not in html and "&lt;img src=x" in html
    titles = [t for t, _ in metric_charts(report)]
    assert titles[:1] == ["Pass rate"] and "LLM calls" in titles and "Agent latency p95" in titles
    assert "pass@k (any of k attempts)" not in titles  # no setting repeated
    assert html.count("<svg") == len(titles) + 2  # and one per category, one per tag
    again = SweepReport.model_validate_json(render_json(report))
    assert again == report
    assert render_summary(report, limit=len(md.encode()) - 1).count(hostile[:4]) == 0  # ids dropped to fit


def test_sweep_report_command_writes_the_formats_and_exits_2_on_refusal(tmp_path, capsys):
    paths = []
    for name, r in sharded("first", 1, FIRST) + sharded("second", 2, SECOND):
        write_run(tmp_path / name, r)
        paths.append(str(tmp_path / name))
    out = {fmt: tmp_path / f"r.{fmt}" for fmt in ("md", "html", "json")}
    argv = ["sweep", "report", *paths, *(x for fmt, p in out.items() for x in (f"--{fmt}", str(p)))]
    assert main(argv) == 0
    assert json.loads(out["json"].read_text())["settings"][1]["versus_first"]["won"] == 3
    assert "<svg" in out["html"].read_text() and "`second`" in out["md"].read_text()
    capsys.readouterr()
    assert main(["sweep", "report", *paths[:3]]) == 2
    assert "setting 'second'" in capsys.readouterr().err
