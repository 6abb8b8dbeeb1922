"""An answer's `usage` (issue 27; bot.base.usage): optional, validated and bounded in the agent's reply, kept by
the answer cache, recorded per case and summed in the summary (so shards merge exactly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agents.base import answer_from_reply
from bot.base.results import CaseResult, Prediction, summarize
from bot.base.usage import AnswerUsage, UsageTotals
from bot.run.cache import AnswerCache


def test_a_reply_may_say_what_the_answer_cost() -> None:
    usage = {"model": "m", "llm_calls": 2, "prompt_tokens": 900, "completion_tokens": 40, "cost_usd": 0.0021}
    answer = answer_from_reply({"sql": "SELECT 1", "usage": usage}, source="the agent")
    assert answer.sql == "SELECT 1" and answer.usage == AnswerUsage(**usage)
    assert answer.usage.tokens == 940
    assert answer_from_reply({"sql": "SELECT 1"}, source="the agent").usage is None
    partial = answer_from_reply({"sql": "SELECT 1", "usage": {"cost_usd": 0.5}}, source="the agent").usage
    assert partial == AnswerUsage(cost_usd=0.5) and partial.tokens is None


@pytest.mark.parametrize(
    ("usage", "named"),
    [
        ({"prompt_tokens": -1}, "prompt_tokens"),
        ({"cost_usd": "a lot"}, "cost_usd"),
        ({"cost_usd": float("nan")}, "cost_usd"),
        ({"completion_tokens": 10**12}, "completion_tokens"),
        ({"tokens": 5}, "tokens"),  # not a field: a typo is named, not ignored
        ("cheap", "expected an object"),
    ],
)
def test_a_usage_that_is_not_valid_is_the_agent_s_bad_output_naming_the_field(usage, named) -> None:
    answer = answer_from_reply({"sql": "SELECT 1", "usage": usage}, source="the agent")
    assert answer.error_class == "agent_bad_output" and answer.sql is None
    assert "`usage` that is not valid" in (answer.error or "") and named in (answer.error or "")


def test_the_answer_cache_keeps_the_usage_and_says_the_answer_was_cached(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path)
    usage = AnswerUsage(prompt_tokens=10, completion_tokens=2, cost_usd=0.01)
    cache.put("ab" * 16, answer_from_reply({"sql": "SELECT 1", "usage": usage.model_dump()}, source="a"))
    back = cache.get("ab" * 16)
    assert back is not None and back.usage == usage and back.cached


def _case(i: int, usage: AnswerUsage | None) -> CaseResult:
    return CaseResult(id=f"c{i}", status="passed", category="query", prediction=Prediction(usage=usage))


def test_the_summary_sums_the_reported_usage_and_says_nothing_without_any() -> None:
    cases = [
        _case(0, AnswerUsage(llm_calls=1, prompt_tokens=100, completion_tokens=10, cost_usd=0.25)),
        _case(1, AnswerUsage(llm_calls=2, prompt_tokens=50, completion_tokens=5)),
        _case(2, None),
    ]
    summary = summarize(cases)
    assert summary.usage == UsageTotals(
        answers=2, llm_calls=3, prompt_tokens=150, completion_tokens=15, cost_usd=0.25
    )
    assert summarize(cases[:1]).usage.cost_usd + summarize(cases[1:]).usage.llm_calls == 2.25
    plain = summarize([_case(0, None)])
    assert plain.usage is None and "usage" not in plain.model_dump()
    assert "usage" not in _case(0, None).prediction.model_dump()
