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
from bot.cases.loader import load_suite
from bot.cli import main
from bot.results import read_run
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
    template, _ = ensure_template(pg_server, db_label="shop", files=(SHOP / "fixtures" / "shop.sql",))
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
