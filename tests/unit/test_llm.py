"""The LLM layer through the real openai client against tests/support/fake_openai.py (loopback only)."""

from __future__ import annotations

import json
import logging

import pytest

from bot.base.errors import EXIT_BAD_INPUT
from bot.config.llm import Price
from bot.config.model import Config
from bot.llm import BudgetExhausted, LLMBadOutput, LLMClient, LLMSettings, LLMUnavailable, redact
from bot.llm.budget import Budget
from bot.llm.cache import ReplyCache
from bot.llm.jsonparse import JsonParseError, parse_json_object, validate
from bot.llm.pricing import estimate_cost
from tests.support.fake_openai import FakeOpenAI, Reply

KEY = "sk-test-SECRET-4f9a1c"
SCHEMA = {
    "type": "object",
    "properties": {"sql": {"type": "string"}, "clarification": {"type": ["string", "null"]}},
    "required": ["sql"],
}
MSGS = [{"role": "system", "content": "answer in JSON"}, {"role": "user", "content": "how many users?"}]


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        yield srv


def client_for(srv: FakeOpenAI, tmp_path, *, sleeps: list | None = None, **settings) -> LLMClient:
    settings.setdefault("cache", False)
    settings.setdefault("backoff_s", 0.001)
    settings.setdefault("model", "fake-model")
    return LLMClient(
        LLMSettings(base_url=srv.base_url, **settings),
        environ={"OPENAI_API_KEY": KEY},
        cache=ReplyCache(tmp_path / "llm"),
        sleep=(sleeps.append if sleeps is not None else lambda s: None),
        jitter=lambda: 0.5,  # the backoff's random factor fixed, so the waits are what the rules say
    )


# ---- parsing rules (no server) -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "data", "repaired"),
    [
        ('{"sql": "SELECT 1"}', {"sql": "SELECT 1"}, False),
        ('```json\n{"sql": "SELECT 1"}\n```', {"sql": "SELECT 1"}, True),
        ('```\n{"sql": "SELECT 1"}\n```\n', {"sql": "SELECT 1"}, True),
        ('Sure! Here it is: {"sql": "SELECT \'}\' AS x"} Hope this helps.', {"sql": "SELECT '}' AS x"}, True),
        ('{"a": {"b": [1, {"c": 2}]}} and then {"d": 1}', {"a": {"b": [1, {"c": 2}]}}, True),
    ],
)
def test_parse_accepts_fences_and_prose(text, data, repaired):
    parsed = parse_json_object(text)
    assert parsed.data == data
    assert parsed.repaired is repaired


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"sql": "SELECT 1 FROM', "not closed"),
        ('Here: {"sql": "SELECT 1", ', "not closed"),
        ("[1, 2]", "expected a JSON object"),
        ("", "empty"),
        ("no json here", "not a JSON object"),
        ('{"sql": "SELECT 1",}', "not a JSON object"),  # trailing commas are not repaired
    ],
)
def test_parse_rejects_the_rest(text, message):
    with pytest.raises(JsonParseError, match=message):
        parse_json_object(text)


def test_validate_required_fields_and_simple_types():
    assert validate({"sql": "x"}, schema=SCHEMA) == []
    assert validate({"sql": "x", "clarification": None}, schema=SCHEMA) == []
    assert validate({}, schema=SCHEMA) == ["missing required field 'sql'"]
    assert validate({"sql": 3}, schema=SCHEMA) == ["field 'sql' must be string, got int"]
    assert validate({"n": True}, schema={"properties": {"n": {"type": "integer"}}}) != []
    assert validate({"sql": "x"}, schema=None, required=("sql", "reasoning")) == [
        "missing required field 'reasoning'"
    ]


def test_redact_and_cost():
    assert redact(f"bad key {KEY}!", [KEY, None]) == "bad key ***!"
    assert redact("abc", ["ab"]) == "abc"  # too short to be a secret
    prices = {"gpt-4o": Price(input_per_1k=2.5, output_per_1k=10)}
    assert estimate_cost(prices, "gpt-4o-2024-08-06", prompt_tokens=1000, completion_tokens=500) == 7.5
    assert estimate_cost(prices, "llama3", prompt_tokens=1000, completion_tokens=500) is None


def test_settings_env_overrides_and_config_section():
    s = LLMSettings(base_url="http://a/v1", model="m1").with_env(
        {"SQLCANARY_LLM_BASE_URL": "http://b/v1", "SQLCANARY_LLM_MODEL": "m2"}
    )
    assert (s.base_url, s.model) == ("http://b/v1", "m2")
    cfg = Config(
        llm={
            "model": "x",
            "budget": {"max_calls": 3},
            "prices": {"x": {"input_per_1k": 1, "output_per_1k": 2}},
        }
    )
    assert cfg.llm.budget.max_calls == 3
    with pytest.raises(ValueError):
        Config(llm={"api_key": "sk-in-the-config"})  # the key itself never goes in a config file


def test_no_key_for_the_default_endpoint_is_a_clear_error():
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        LLMClient(LLMSettings(), environ={})


# ---- JSON through the real client ----------------------------------------------------------------------------
def test_fenced_reply_is_parsed_without_a_reask(server, tmp_path):
    server.script(['```json\n{"sql": "SELECT count(*) FROM users"}\n```'])
    reply = client_for(server, tmp_path).complete_json(MSGS, schema=SCHEMA)
    assert reply.data == {"sql": "SELECT count(*) FROM users"}
    assert reply.parse_repaired and not reply.cached
    assert len(server.completions) == 1


def test_trailing_prose_is_parsed(server, tmp_path):
    server.script(['{"sql": "SELECT 1", "clarification": null}\n\nLet me know if you need more.'])
    client = client_for(server, tmp_path)
    assert client.complete_json(MSGS, schema=SCHEMA).data["sql"] == "SELECT 1"
    assert tuple(client.parse_stats) == (0, 1, 0)


def test_truncated_reply_is_reasked_once_with_the_error(server, tmp_path):
    server.script(
        [Reply(content='{"sql": "SELECT count(*) FR', finish_reason="length"), '{"sql": "SELECT 2"}']
    )
    client = client_for(server, tmp_path)
    reply = client.complete_json(MSGS, schema=SCHEMA, purpose="case q1")
    assert reply.data == {"sql": "SELECT 2"} and reply.parse_repaired
    assert reply.usage.calls == 2
    first, second = server.completions
    assert second.messages[: len(MSGS)] == MSGS
    assert second.messages[-2] == {"role": "assistant", "content": '{"sql": "SELECT count(*) FR'}
    assert "not closed" in second.messages[-1]["content"] and "max_tokens" in second.messages[-1]["content"]
    assert tuple(client.parse_stats) == (1, 0, 1)


def test_missing_fields_twice_is_bad_output_after_exactly_one_reask(server, tmp_path):
    server.script(['{"clarification": "which users?"}'])
    client = client_for(server, tmp_path)
    with pytest.raises(LLMBadOutput, match="missing required field 'sql'") as info:
        client.complete_json(MSGS, schema=SCHEMA)
    assert info.value.exit_code == EXIT_BAD_INPUT
    assert len(server.completions) == 2
    assert "missing required field 'sql'" in server.completions[1].messages[-1]["content"]
    assert tuple(client.parse_stats) == (0, 0, 2)


def test_wrong_type_is_rejected_then_fixed(server, tmp_path):
    server.script(['{"sql": 42}', '{"sql": "SELECT 42"}'])
    assert client_for(server, tmp_path).complete_json(MSGS, schema=SCHEMA).data == {"sql": "SELECT 42"}


# ---- retries -------------------------------------------------------------------------------------------------
def test_429_then_success_honours_retry_after(server, tmp_path):
    server.script([Reply(status=429, headers={"Retry-After": "2"}), Reply(status=429), '{"sql": "SELECT 1"}'])
    sleeps: list[float] = []
    client = client_for(server, tmp_path, sleeps=sleeps, backoff_s=0.001)
    reply = client.complete_json(MSGS, schema=SCHEMA)
    assert reply.data == {"sql": "SELECT 1"}
    assert len(server.completions) == 3 and reply.usage.calls == 3
    assert sleeps[0] == 2.0  # the server's Retry-After
    assert sleeps[1] < 0.01  # our own backoff when it gives none


def test_retry_after_is_capped(server, tmp_path):
    server.script([Reply(status=429, headers={"retry-after-ms": "900000"}), "plain text"])
    sleeps: list[float] = []
    assert (
        client_for(server, tmp_path, sleeps=sleeps, max_backoff_s=5).complete_text(MSGS).text == "plain text"
    )
    assert sleeps == [5]


def test_500s_exhaust_the_retries_then_unavailable(server, tmp_path):
    server.script([Reply(status=500, content="upstream exploded")])
    sleeps: list[float] = []
    with pytest.raises(LLMUnavailable, match=r"after 3 attempt\(s\): HTTP 500") as info:
        client_for(server, tmp_path, sleeps=sleeps, max_retries=2).complete_text(MSGS)
    assert len(server.completions) == 3 and len(sleeps) == 2
    assert sleeps[1] == pytest.approx(2 * sleeps[0])  # exponential (the random factor is fixed here)
    assert info.value.exit_code == EXIT_BAD_INPUT


def test_timeouts_are_retried(server, tmp_path):
    server.script([Reply(content="late", delay_s=1.0), "on time"])
    client = client_for(server, tmp_path, timeout_s=0.2, first_timeout_s=0.2, max_retries=1)
    assert client.complete_text(MSGS).text == "on time"


def test_401_is_not_retried(server, tmp_path):
    server.script([Reply(status=401, content="invalid key")])
    with pytest.raises(LLMUnavailable, match="HTTP 401"):
        client_for(server, tmp_path, max_retries=5).complete_text(MSGS)
    assert len(server.completions) == 1


def test_malformed_body_is_a_clear_error(server, tmp_path):
    server.script([Reply(body="<html>gateway</html>")])
    with pytest.raises(LLMUnavailable, match="malformed"):
        client_for(server, tmp_path).complete_text(MSGS)


# ---- budget --------------------------------------------------------------------------------------------------
def test_call_budget_is_never_exceeded(server, tmp_path):
    server.script(["ok"])
    client = client_for(server, tmp_path, budget={"max_calls": 3})
    for i in range(3):
        client.complete_text([{"role": "user", "content": f"q{i}"}])
    with pytest.raises(BudgetExhausted, match="3 of 3"):
        client.complete_text([{"role": "user", "content": "q3"}])
    assert len(server.completions) == 3
    assert client.usage.calls == 3


def test_retries_and_reasks_count_against_the_budget(server, tmp_path):
    server.script([Reply(status=500)])
    with pytest.raises(BudgetExhausted):
        client_for(server, tmp_path, budget={"max_calls": 2}, max_retries=10).complete_text(MSGS)
    assert len(server.completions) == 2
    server.script(["not json"])
    with pytest.raises(BudgetExhausted):
        client_for(server, tmp_path, budget={"max_calls": 1}).complete_json(MSGS, schema=SCHEMA)
    assert len(server.completions) == 3


def test_token_budget_refuses_before_sending(server, tmp_path):
    client = client_for(server, tmp_path, budget={"max_tokens": 100}, max_tokens=2048)
    with pytest.raises(BudgetExhausted, match="token budget"):
        client.complete_text(MSGS)
    assert server.completions == []


def test_shared_budget_across_clients(server, tmp_path):
    budget = Budget(max_calls=1)
    a = LLMClient(LLMSettings(base_url=server.base_url, cache=False), environ={}, budget=budget)
    b = LLMClient(LLMSettings(base_url=server.base_url, cache=False), environ={}, budget=budget)
    a.complete_text(MSGS)
    with pytest.raises(BudgetExhausted):
        b.complete_text(MSGS)
    assert len(server.completions) == 1


def test_usage_and_cost(server, tmp_path):
    server.script([Reply(content='{"sql": "SELECT 1"}', usage=(1000, 500))])
    client = client_for(server, tmp_path, prices={"fake-model": {"input_per_1k": 1.0, "output_per_1k": 2.0}})
    reply = client.complete_json(MSGS, schema=SCHEMA)
    assert reply.usage.cost_usd == 2.0
    assert (client.usage.prompt_tokens, client.usage.completion_tokens, client.usage.cost_usd) == (
        1000,
        500,
        2.0,
    )


# ---- cache ---------------------------------------------------------------------------------------------------
def test_cache_makes_a_repeated_call_hit_the_server_zero_times(server, tmp_path):
    server.script(['{"sql": "SELECT 1"}'])
    first = client_for(server, tmp_path, cache=True).complete_json(MSGS, schema=SCHEMA)
    assert len(server.completions) == 1
    again = client_for(server, tmp_path, cache=True, budget={"max_calls": 0})  # a new run, no budget at all
    reply = again.complete_json(MSGS, schema=SCHEMA)
    assert reply.cached and reply.data == first.data
    assert len(server.completions) == 1
    assert (again.usage.calls, again.usage.cached_calls) == (0, 1)
    other = [{"role": "user", "content": "a different question"}]
    client_for(server, tmp_path, cache=True).complete_json(other, schema=SCHEMA)
    assert len(server.completions) == 2  # the key covers the messages


def test_cache_key_covers_model_and_parameters(server, tmp_path):
    server.script(["one"])
    client_for(server, tmp_path, cache=True).complete_text(MSGS)
    client_for(server, tmp_path, cache=True, temperature=0.7).complete_text(MSGS)
    client_for(server, tmp_path, cache=True, model="other-model").complete_text(MSGS)
    client_for(server, tmp_path, cache=True, max_tokens=10).complete_text(MSGS)
    client_for(server, tmp_path, cache=True).complete_text(MSGS)  # same as the first: cached
    assert len(server.completions) == 4


def test_cache_false_always_asks(server, tmp_path):
    server.script(["one"])
    client_for(server, tmp_path, cache=True).complete_text(MSGS)
    client_for(server, tmp_path, cache=False).complete_text(MSGS)
    assert len(server.completions) == 2


def test_failed_replies_are_not_cached(server, tmp_path):
    server.script(["nope"])
    with pytest.raises(LLMBadOutput):
        client_for(server, tmp_path, cache=True).complete_json(MSGS, schema=SCHEMA)
    assert not list((tmp_path / "llm").rglob("*.json"))


# ---- response_format fallback --------------------------------------------------------------------------------
def _rejects(*kinds: str):
    def reply(request: dict):
        rf = request.get("response_format")
        if rf and rf.get("type") in kinds:
            return Reply(status=400, content=f"response_format {rf['type']} is not supported")
        return '{"sql": "SELECT 1"}'

    return reply


def test_response_format_steps_down_and_is_remembered(server, tmp_path):
    server.script(_rejects("json_schema"))
    client = client_for(server, tmp_path)
    assert client.complete_json(MSGS, schema=SCHEMA).data == {"sql": "SELECT 1"}
    kinds = [r.json.get("response_format", {}).get("type") for r in server.completions]
    assert kinds == ["json_schema", "json_object"]
    assert server.completions[0].json["response_format"]["json_schema"]["schema"] == SCHEMA
    client.complete_json([{"role": "user", "content": "again"}], schema=SCHEMA)
    assert server.completions[-1].json["response_format"] == {"type": "json_object"}
    assert client.response_format == "json_object"


def test_response_format_falls_back_to_none(server, tmp_path):
    server.script(_rejects("json_schema", "json_object"))
    client = client_for(server, tmp_path)
    assert client.complete_json(MSGS, schema=SCHEMA).data == {"sql": "SELECT 1"}
    assert "response_format" not in server.completions[-1].json
    assert len(server.completions) == 3


def test_a_400_without_response_format_is_an_error(server, tmp_path):
    server.script([Reply(status=400, content="context length exceeded")])
    with pytest.raises(LLMUnavailable, match="HTTP 400"):
        client_for(server, tmp_path).complete_text(MSGS)
    assert len(server.completions) == 1


# ---- secrets -------------------------------------------------------------------------------------------------
def test_the_key_never_leaks(server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []
    scripts = [
        [Reply(status=401, content=f"Incorrect API key provided: {KEY}")],
        [Reply(status=500, content=f"key {KEY} overloaded")],
        [f"not json, your key is {KEY}"],
        [Reply(body=f"garbage {KEY}")],
    ]
    for script in scripts:
        server.script(script)
        with pytest.raises(LLMUnavailable if script is not scripts[2] else LLMBadOutput) as info:
            client = client_for(server, tmp_path, max_retries=1, cache=True)
            if script is scripts[2]:
                client.complete_json(MSGS, schema=SCHEMA)
            else:
                client.complete_text(MSGS)
        errors += [str(info.value), repr(info.value)]
    server.script(["fine"])
    client = client_for(server, tmp_path, cache=True)
    client.complete_text(MSGS)
    assert any(
        KEY in r.headers.get("Authorization", r.headers.get("authorization", "")) for r in server.requests
    )
    texts = [*errors, repr(client), repr(client.settings), caplog.text]
    texts += [p.read_text() for p in (tmp_path / "llm").rglob("*.json")]
    texts += [r.prompt_text for r in server.completions]
    assert [t for t in texts if KEY in t] == []
    assert any("***" in e for e in errors)


def test_models_endpoint_and_recording(server):
    import openai

    models = openai.OpenAI(base_url=server.base_url, api_key="x").models.list()
    assert [m.id for m in models] == ["fake-model"]
    assert server.requests[-1].method == "GET"
    assert json.loads(json.dumps(server.requests[-1].headers))  # headers are plain data


# ---- the optional llm_judge scorer ---------------------------------------------------------------------------
def test_llm_judge_verdicts(server, tmp_path):
    from bot.scoring.llm_judge import llm_judge_verdict

    client = client_for(server, tmp_path)
    server.script(
        ['{"equivalent": false, "confidence": "high", "reason": "the candidate drops the region filter"}']
    )
    v = llm_judge_verdict(client, "spend in TH?", "SELECT 1 WHERE r = 'TH'", "SELECT 1")
    assert (v.scorer, v.match, v.kind) == ("llm_judge", False, "different")
    assert "region filter" in v.message and "confidence_high" in v.flags
    prompt = server.completions[-1].prompt_text
    assert "SELECT 1 WHERE r = 'TH'" in prompt and "spend in TH?" in prompt
    server.script(['{"equivalent": "yes"}'])  # wrong type and missing reason, twice: undecided, never wrong
    v = llm_judge_verdict(client, "q", "SELECT 1", "SELECT 1")
    assert v.match is None and v.kind == "llm_error"
    assert len(server.completions) == 3


# ---- slow local servers (issue 11) ---------------------------------------------------------------------------
LLAMA_CPP_TOO_LONG = (
    "request (9120 tokens) exceeds the available context size (4096 tokens), try increasing it"
)


@pytest.mark.parametrize(
    ("message", "limit", "prompt"),
    [
        (LLAMA_CPP_TOO_LONG, 4096, 9120),
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
            "Please reduce the length of the messages. (context_length_exceeded)",
            8192,
            9000,
        ),
        ("the request exceeds the available context size, try increasing it", None, None),
    ],
)
def test_a_context_length_400_keeps_json_mode_and_names_the_limit(server, tmp_path, message, limit, prompt):
    from bot.llm import LLMContextTooLong

    def reply(request: dict):
        if "too long" in request["messages"][-1]["content"]:
            return Reply(status=400, content=message)
        return '{"sql": "SELECT 1"}'

    server.script(reply)
    client = client_for(server, tmp_path)
    with pytest.raises(LLMContextTooLong) as info:
        client.complete_json(
            [{"role": "user", "content": "too long " * 50}], schema=SCHEMA, purpose="case q1"
        )
    assert len(server.completions) == 1  # not retried in another response format
    assert (info.value.limit, info.value.prompt_tokens) == (limit, prompt)
    text = str(info.value)
    assert "HTTP 400" in text and "context" in text and "for case q1" in text
    assert (f"context of {limit} tokens" in text) if limit else "the model's context" in text
    assert "--ctx-size" in text and "kb.paths" in text
    assert client.response_format == "json_schema"  # the next call still asks for the schema
    client.complete_json(MSGS, schema=SCHEMA)
    assert server.completions[-1].json["response_format"]["type"] == "json_schema"


def test_a_rejected_format_is_kept_only_when_the_next_one_works_and_errors_count_every_request(
    server, tmp_path
):
    server.script([Reply(status=400, content="invalid request: bad parameter")])
    client = client_for(server, tmp_path)
    with pytest.raises(LLMUnavailable, match=r"after 3 attempt\(s\): HTTP 400"):
        client.complete_json(MSGS, schema=SCHEMA)
    assert len(server.completions) == 3  # json_schema, json_object, none: each tried once, all refused
    assert client.response_format == "json_schema"  # none of them worked: nothing is remembered


def test_a_timeout_names_the_setting_to_raise(server, tmp_path):
    server.script([Reply(content="late", delay_s=0.6)])
    client = client_for(server, tmp_path, timeout_s=0.2, first_timeout_s=0.2, max_retries=1)
    with pytest.raises(LLMUnavailable) as info:
        client.complete_text(MSGS)
    assert "after 2 attempt(s)" in str(info.value) and "llm.first_timeout_s" in str(info.value)
    server.script(["fast", Reply(content="late", delay_s=0.6)])
    client = client_for(server, tmp_path, timeout_s=0.2, first_timeout_s=5, max_retries=0)
    assert client.complete_text(MSGS).text == "fast"  # the first reply: later requests get timeout_s
    with pytest.raises(LLMUnavailable, match=r"within 0.2s: raise llm\.timeout_s in sqlcanary\.yml"):
        client.complete_text([{"role": "user", "content": "another"}])


def test_local_servers_get_long_timeouts_and_one_request_at_a_time():
    local = LLMSettings(base_url="http://127.0.0.1:8080/v1")
    assert (local.request_timeout_s, local.cold_timeout_s, local.concurrency) == (180.0, 600.0, 1)
    hosted = LLMSettings()
    assert (hosted.request_timeout_s, hosted.cold_timeout_s, hosted.concurrency) == (60.0, 60.0, None)
    tuned = LLMSettings(
        base_url="http://localhost:11434/v1", timeout_s=30, first_timeout_s=900, max_concurrency=4
    )
    assert (tuned.request_timeout_s, tuned.cold_timeout_s, tuned.concurrency) == (30, 900, 4)


def test_max_concurrency_queues_requests_in_the_client(server, tmp_path):
    import threading

    in_flight, peak = [0], [0]
    lock = threading.Lock()

    def reply(request: dict):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        import time

        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return "ok"

    server.script(reply)
    client = client_for(server, tmp_path, max_concurrency=1)
    threads = [
        threading.Thread(target=client.complete_text, args=([{"role": "user", "content": str(i)}],))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(server.completions) == 4 and peak[0] == 1


def test_the_attempt_is_in_the_cache_key_only_above_temperature_zero(server, tmp_path):
    server.script(['{"sql": "SELECT 1"}'])
    warm = client_for(server, tmp_path, cache=True, temperature=0.7)
    for attempt in range(3):
        warm.complete_json(MSGS, schema=SCHEMA, attempt=attempt)
    assert len(server.completions) == 3  # three samples, not one reply replayed three times
    warm.complete_json(MSGS, schema=SCHEMA, attempt=1)
    assert len(server.completions) == 3  # the same attempt again: cached
    cold = client_for(server, tmp_path, cache=True, temperature=0.0)
    for attempt in range(3):
        cold.complete_json(MSGS, schema=SCHEMA, attempt=attempt)
    assert len(server.completions) == 4 and cold.usage.cached_calls == 2
    # each sample carries its attempt as the seed (reproducible on llama.cpp, vLLM, Ollama); at 0, no seed
    assert [r.json.get("seed") for r in server.completions] == [0, 1, 2, None]


def test_a_call_can_sample_warmer_and_shorter_than_the_settings(server, tmp_path):
    """The repair loop's retries: temperature and reply cap per call; the cap never above the settings'."""
    server.script(['{"sql": "SELECT 1"}'])
    client = client_for(server, tmp_path, cache=True, temperature=0.0)
    client.complete_json(MSGS, schema=SCHEMA, attempt=2, temperature=0.6, max_tokens=100)
    client.complete_json(MSGS, schema=SCHEMA, attempt=2, temperature=0.6, max_tokens=10**6)
    client.complete_json(MSGS, schema=SCHEMA, attempt=2)
    sent = [(r.json["temperature"], r.json.get("max_tokens"), r.json.get("seed")) for r in server.completions]
    assert sent == [
        (0.6, 100, 2),
        (0.6, client.settings.max_tokens, 2),
        (0.0, client.settings.max_tokens, None),
    ]
