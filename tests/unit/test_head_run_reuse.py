"""Which runs may be reused whole (bot.run.reuse): only a check's head, with its answers cacheable, and never a
run that asks for something a saved run cannot give (--last-failed, --exitfirst, a shard, --llm-judge)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.base.results import RunMeta, RunResult, Summary
from bot.config.model import Config
from bot.run.cache import AnswerCache
from bot.run.request import RunRequest
from bot.run.reuse import HeadRunKey, head_run_key
from bot.run.runner import RunOptions

HEAD = RunRequest(side="head")
OPTS = RunOptions(
    agent_fingerprint="a" * 16, kb_fingerprint="k", answer_cache=AnswerCache(Path("/nonexistent"))
)


@pytest.mark.parametrize(
    ("req", "opts", "config"),
    [
        (RunRequest(side="base"), OPTS, Config()),
        (RunRequest(), OPTS, Config()),
        (HEAD, replace(OPTS, answer_cache=None), Config()),  # SQLCANARY_ANSWER_CACHE=off, or a remote agent
        (HEAD, replace(OPTS, agent_fingerprint=""), Config()),  # what the agent reads cannot be known
        (HEAD, OPTS, Config.model_validate({"cache": {"runs": False}})),
        (replace(HEAD, last_failed=True), OPTS, Config()),
        (replace(HEAD, exitfirst=True), OPTS, Config()),
        (HEAD, replace(OPTS, shard="1/2"), Config()),
        (HEAD, replace(OPTS, judge=lambda case, sql: None), Config()),
    ],
)
def test_only_a_plain_head_run_with_cacheable_answers_is_reused(req, opts, config) -> None:
    # Nothing past the rules is looked at: no suite, cases or server is needed to refuse.
    assert head_run_key(req, config, None, [], opts, None, spec="python:a.py:f", agent_timeout=None) is None  # type: ignore[arg-type]


def _run(**meta) -> RunResult:
    base = {"suite": "s", "suite_hash": "h", "agent_fingerprint": "a", "kb_fingerprint": "k"}
    return RunResult(meta=RunMeta(**{**base, **meta}), summary=Summary(), cases=())


@pytest.mark.parametrize(
    ("meta", "used"),
    [
        ({}, True),
        ({"agent_fingerprint": "b"}, False),  # another tree's run, planted under this key's name
        ({"kb_fingerprint": "x"}, False),
        ({"suite_hash": "x"}, False),
        ({"complete": False}, False),  # an interrupted run
    ],
)
def test_a_cached_run_is_used_only_when_it_records_the_key_s_fingerprints(meta, used) -> None:
    assert HeadRunKey("key", "a", "k", "h").matches(_run(**meta)) is used
