"""`--agent llm` on the shop suite through the real openai client against a scripted local server: the prompt
has the schema and the KB but never the gold SQL, the gold answers pass, and the LLM cache makes a repeated run
call the server zero times."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from bot.agents import AgentContext, make_agent
from bot.base.fixture_files import trusted_fixtures
from bot.base.results import read_run
from bot.cases.loader import load_suite
from bot.cli import main
from tests.support.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
IDS = ["shop-ads-spend-th-nov", "shop-ads-ctr-by-channel-sea-q3", "shop-ads-cvr-id-dec"]
KEY = "sk-test-never-in-a-prompt-77"


def gold_by_question() -> dict[str, str]:
    return {c.question: c.gold_sql[0] for c in load_suite(SHOP).cases if c.id in IDS}


def answer_with_gold(request: dict):
    prompt = request["messages"][-1]["content"]
    for question, sql in gold_by_question().items():
        if question in prompt:
            return f'```json\n{{"sql": {json.dumps(sql)}, "clarification": null}}\n```'
    return Reply(status=500, content="unknown question")


@pytest.fixture
def shop_with_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    target = tmp_path / "shop"
    shutil.copytree(SHOP, target, ignore=shutil.ignore_patterns("__pycache__"))
    with FakeOpenAI(answer_with_gold) as server:
        config = yaml.safe_load((target / "sqlcanary.yml").read_text())
        config["agent"] = "llm"
        config["llm"] = {"base_url": server.base_url, "model": "fake-model", "backoff_s": 0.001}
        (target / "sqlcanary.yml").write_text(yaml.safe_dump(config))
        yield target, server


def run(suite: Path, out: Path, dsn: str, *extra: str, exit_code: int = 0):
    ids = [arg for i in IDS for arg in ("--id", i)]
    rc = main(["run", str(suite), "--dsn", dsn, "--out", str(out), "-q", *ids, *extra])
    assert rc == exit_code
    return read_run(out)


def test_llm_agent_with_gold_replies_passes_and_prompts_hold_schema_and_kb(shop_with_llm, pg_dsn, tmp_path):
    suite, server = shop_with_llm
    result = run(suite, tmp_path / "run.json", pg_dsn)
    assert {c.id: c.status for c in result.cases} == dict.fromkeys(IDS, "passed")
    assert result.meta.agent == "llm:fake-model"
    assert len(server.completions) == len(IDS)
    dau = (SHOP / "kb" / "metrics" / "dau.yaml").read_text().strip().splitlines()[0]
    for request in server.completions:
        prompt = request.prompt_text
        assert "CREATE TABLE regions" in prompt  # the schema (fixture DDL: the runner passes no DSN)
        assert "Markets the platform operates in" in prompt  # with its COMMENTs
        assert "kb/metrics/dau.yaml" in prompt and dau in prompt  # the KB files the config names
        assert KEY not in prompt
        assert request.json["response_format"]["type"] == "json_schema"
    for case in load_suite(SHOP).cases:  # never the gold SQL, not even another case's
        for sql in case.gold_sql:
            assert all(sql not in r.prompt_text for r in server.completions)
    used = result.cases[0].prediction.used
    assert "kb/metrics/dau.yaml" in used and not any(u.startswith(("/", "..")) for u in used)


def test_llm_cache_makes_a_repeated_run_call_the_server_zero_times(shop_with_llm, pg_dsn, tmp_path):
    suite, server = shop_with_llm
    run(suite, tmp_path / "a.json", pg_dsn, "--no-answer-cache")
    seen = len(server.completions)
    assert seen == len(IDS)
    again = run(suite, tmp_path / "b.json", pg_dsn, "--no-answer-cache")
    assert len(server.completions) == seen
    assert {c.status for c in again.cases} == {"passed"}


def test_bad_output_is_recorded_on_the_case(shop_with_llm, pg_dsn, tmp_path):
    suite, server = shop_with_llm
    server.script(['{"sql": "SELECT 1 FROM'])  # truncated, twice: one re-ask, then the case errors
    # Every case errored: a broken agent, not a 0% pass rate (exit 2), and every case is still recorded.
    result = run(suite, tmp_path / "bad.json", pg_dsn, "--jobs", "1", exit_code=2)
    assert {c.prediction.error_class for c in result.cases} == {"agent_bad_output"}
    assert len(server.completions) == 2 * len(IDS)


def test_live_schema_from_a_dsn_has_types_and_comments(pg_server, tmp_path, monkeypatch):
    from bot.db.templates import clone_database, drop_database, ensure_template

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    template, _ = ensure_template(
        pg_server, db_label="shop", files=trusted_fixtures([SHOP / "fixtures" / "shop.sql"])
    )
    name = "sqlcanary_test_llm_schema"
    drop_database(pg_server, name)
    clone_database(pg_server, template, name)
    try:
        from psycopg2.extensions import make_dsn

        dsn = make_dsn(pg_server.admin_dsn, dbname=name)
        with FakeOpenAI(['{"sql": null, "clarification": "which market?"}']) as server:
            ctx = AgentContext(
                base_dir=str(SHOP),
                options={"dsn": {"shop": dsn}, "llm": {"base_url": server.base_url, "cache": False}},
            )
            agent = make_agent("llm", ctx)
            case = next(c for c in load_suite(SHOP).cases if c.id == IDS[0])
            answer = agent.answer(case)
            prompt = server.completions[0].prompt_text
    finally:
        drop_database(pg_server, name)
    assert answer.sql is None and answer.error_class == "agent_declined" and "which market?" in answer.error
    assert "TABLE regions (" in prompt and "region_code text NOT NULL  -- Two-letter market code" in prompt
    assert "-- Markets the platform operates in" in prompt


def _set_llm(suite: Path, **settings) -> None:
    config = yaml.safe_load((suite / "sqlcanary.yml").read_text())
    config["llm"].update(settings)
    (suite / "sqlcanary.yml").write_text(yaml.safe_dump(config))


@pytest.mark.parametrize(("temperature", "per_case"), [(0.7, 3), (0.0, 1)])
def test_repeat_at_a_temperature_above_zero_asks_once_per_attempt(
    shop_with_llm, pg_dsn, tmp_path, temperature, per_case
):
    suite, server = shop_with_llm
    _set_llm(suite, temperature=temperature)
    result = run(suite, tmp_path / "r.json", pg_dsn, "--repeat", "3", "--jobs", "1")
    assert len(server.completions) == per_case * len(IDS)
    assert all(len(c.attempts) == 3 and c.status == "passed" for c in result.cases)
    assert result.meta.llm is not None
    assert (result.meta.llm.calls, result.meta.llm.cached_calls) == (
        per_case * len(IDS),
        (3 - per_case) * len(IDS),
    )


def test_llm_usage_is_in_the_summary_and_the_run_meta(shop_with_llm, pg_dsn, tmp_path, capsys):
    suite, server = shop_with_llm
    _set_llm(suite, prices={"fake-model": {"input_per_1k": 1.0, "output_per_1k": 2.0}})
    result = run(suite, tmp_path / "u.json", pg_dsn)
    usage = result.meta.llm
    assert usage is not None and usage.model == "fake-model"
    assert (usage.calls, usage.cached_calls, usage.prompt_tokens, usage.completion_tokens) == (3, 0, 30, 15)
    assert usage.cost_usd == pytest.approx(0.06) and (usage.parse_ok, usage.parse_repaired) == (
        0,
        3,
    )  # fenced
    out = capsys.readouterr().out
    assert "LLM fake-model: 3 request(s), 0 from the cache, 30 prompt + 15 completion tokens, $0.0600" in out
    assert "replies parsed 0 as sent, 3 repaired, 0 unusable" in out
    # Each answer says what it cost (issue 27), and the summary sums it as the run's meta does.
    per_case = [c.prediction.usage for c in result.cases]
    assert all(u is not None and u.model == "fake-model" and u.llm_calls == 1 for u in per_case)
    assert result.summary.usage is not None and result.summary.usage.tokens == 45
    assert result.summary.usage.cost_usd == pytest.approx(0.06)
    again = run(suite, tmp_path / "v.json", pg_dsn)
    assert again.meta.llm is not None and (again.meta.llm.calls, again.meta.llm.cached_calls) == (0, 3)
    # From the reply cache, an answer still says what producing it cost: base and head compare like for like.
    assert [c.prediction.usage for c in again.cases] == per_case
    old = json.loads((tmp_path / "u.json").read_text())
    del old["meta"]["llm"]  # a run written before the field existed still loads
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert read_run(tmp_path / "old.json").meta.llm is None


def _context_of(limit_chars: int):
    """A server whose context holds `limit_chars` characters of prompt: longer prompts get llama.cpp's 400."""

    def reply(request: dict):
        chars = sum(len(m["content"]) for m in request["messages"])
        if chars > limit_chars:
            return Reply(
                status=400,
                content=f"request ({chars // 4} tokens) exceeds the available context size "
                f"({limit_chars // 4} tokens), try increasing it",
            )
        return answer_with_gold(request)

    return reply


def test_a_prompt_over_the_context_drops_the_kb_files_least_related_to_the_case(
    shop_with_llm, pg_dsn, tmp_path
):
    suite, server = shop_with_llm
    full = sum(len(p.read_text()) for p in (suite / "kb").rglob("*") if p.is_file())
    server.script(
        _context_of(full)
    )  # the whole KB alone fills it: with the schema and the question, too long
    result = run(suite, tmp_path / "t.json", pg_dsn, "--jobs", "1")
    assert {c.status for c in result.cases} == {"passed"}
    assert all(r.json["response_format"]["type"] == "json_schema" for r in server.completions)
    cpc_case = next(c for c in result.cases if c.id == "shop-ads-spend-th-nov")
    assert "kb/metrics/ad_spend.yaml" in cpc_case.prediction.used  # the file the question is about stayed
    assert len(cpc_case.prediction.used) < len(list((suite / "kb").rglob("*.*")))
    # the smaller KB is remembered: after the first case, no request is refused
    assert len(server.completions) < 2 * len(IDS)


def test_a_question_longer_than_the_context_errors_the_case_naming_the_limit(shop_with_llm, pg_dsn, tmp_path):
    suite, server = shop_with_llm
    server.script(_context_of(100))
    result = run(suite, tmp_path / "x.json", pg_dsn, "--jobs", "1", exit_code=2)
    reasons = {c.prediction.error_class for c in result.cases}
    assert reasons == {"agent_context_too_long"}
    assert "context of 25 tokens" in result.cases[0].reason and "--ctx-size" in result.cases[0].reason


def test_the_prompt_says_what_each_category_asks_for(shop_with_llm):
    suite, _ = shop_with_llm
    from bot.agents.llm import LLMAgent

    agent = LLMAgent("", AgentContext(base_dir=str(suite)))
    by_category = {c.category: c for c in load_suite(suite).cases}
    prompts = {k: agent.messages(c) for k, c in by_category.items()}
    assert len({p[0]["content"] for p in prompts.values()}) == 1  # one system prompt: a shared prefix
    assert "read-only query" in prompts["query"][1]["content"]
    assert "INSERT, UPDATE, DELETE" in prompts["management"][1]["content"]
    assert "read-only" not in prompts["management"][1]["content"]
    assert "cheaper" in prompts["efficiency"][1]["content"]
    assert "-- Two-letter market code" in prompts["query"][1]["content"]  # column comments beside the column
