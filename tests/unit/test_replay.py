"""The shipped replay provider: replay files (matchers -> replies, errors at file:line), requests read back into
kind/case/attempt from the real prompts, and the real LLMClient reaching the shipped server through
`base_url: replay:FILE` with no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.base.errors import ConfigError
from bot.config.llm import LLMSettings
from bot.llm import LLMClient, LLMUnavailable
from bot.llm.replay import load_replay
from bot.llm.replay_request import describe
from bot.repair.context import FailureContext
from bot.repair.prompts import case_messages, critique_messages
from bot.scoring.llm_judge import judge_messages

REPO = Path(__file__).resolve().parents[2]
WALKTHROUGH = REPO / "benchmarks" / "shop" / "llm" / "repair-walkthrough.yml"
SCHEMA = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "replies.yml"
    path.write_text(text)
    return path


def failure(case_id: str = "shop-traffic-dau-id-nov") -> FailureContext:
    return FailureContext(
        id=case_id,
        question="ID DAU in November 2025",
        category="query",
        status="failed",
        gold=("SELECT 1",),
        prediction="SELECT 2",
        reason="values differ",
        first_difference="dau 10 vs 20",
        structural="",
        instructions="",
        excerpts=(),
    )


# ---- reading requests back ----------------------------------------------------------------------------------
def test_a_repair_prompt_names_its_case_and_attempt():
    first = describe(
        {"messages": case_messages(failure(), globs=["kb/**"], files=[], feedback=[], secrets=())}
    )
    third = describe(
        {"messages": case_messages(failure(), globs=["kb/**"], files=[], feedback=["a", "b"], secrets=())}
    )
    assert (first.kind, first.case, first.attempt, first.reask) == (
        "repair",
        "shop-traffic-dau-id-nov",
        1,
        False,
    )
    assert (third.kind, third.attempt) == ("repair", 3)
    assert third.label() == "kind repair, case shop-traffic-dau-id-nov, attempt 3"


def test_critique_judge_agent_and_reask_are_told_apart():
    critique = describe(
        {
            "messages": critique_messages(
                diff="-a\n+b", repaired=["x", "y"], globs=["kb/**"], feedback=["no"], secrets=()
            )
        }
    )
    assert (critique.kind, critique.case, critique.attempt) == ("critique", "x, y", 2)
    judge = describe({"messages": judge_messages("TH GMV in December 2025", "SELECT 1", "SELECT 2")})
    assert (judge.kind, judge.question) == ("judge", "TH GMV in December 2025")
    from bot.base.templating import environment

    env = environment()
    agent = [
        {"role": "system", "content": env.get_template("prompts/agent_system.md.j2").render()},
        {
            "role": "user",
            "content": env.get_template("prompts/agent.md.j2").render(
                db="shop",
                schema="",
                kb_files=[],
                question="TH GMV in December 2025",
                instructions="",
                category="query",
            ),
        },
    ]
    info = describe({"messages": agent})
    assert (info.kind, info.question) == ("agent", "TH GMV in December 2025")
    again = describe(
        {"messages": [*agent, {"role": "assistant", "content": "nope"}, {"role": "user", "content": "again"}]}
    )
    assert again.kind == "agent" and again.reask
    assert describe({"messages": [{"role": "user", "content": "hello"}]}).kind == "chat"


# ---- the file ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("replies:\n  - kind: repair\n    cotains: x\n    reply: y\n", 3, "did you mean `contains`"),
        ("replies:\n  - kind: repiar\n    reply: y\n", 2, "one of repair, critique"),
        ("replies:\n  - kind: repair\n", 2, "exactly one of `reply` or `error`"),
        ("replies:\n  - kind: repair\n    times: 0\n    reply: x\n", 3, "a whole number from 1"),
        ("replies:\n  - just text\n", 2, "each reply is a mapping"),
        ("replies:\n  - kind: repair\n  reply: x\n", 3, "unparsable YAML"),
        ("reply:\n  - kind: repair\n", 1, "`replies:` list"),
        ("replies: x\nextra: 1\n", 2, "unknown key `extra`"),
    ],
)
def test_a_bad_replay_file_names_file_line_and_the_fix(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_replay(path)
    assert (err.value.path, err.value.line) == (str(path), line)
    assert words in str(err.value)
    assert str(err.value).startswith(f"{path}:{line}: ")


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no such replay file"):
        load_replay(tmp_path / "nope.yml")
    with pytest.raises(ConfigError, match="no such replay file"):
        LLMClient(LLMSettings(base_url=f"replay:{tmp_path / 'nope.yml'}"), environ={})


def test_the_shipped_walkthrough_file_loads():
    replay = load_replay(WALKTHROUGH)
    assert [e.kind for e in replay.entries] == ["repair", "repair", "critique"]


def test_replay_without_a_file_is_refused():
    with pytest.raises(ValueError, match="needs a file"):
        LLMSettings(base_url="replay:")


# ---- through the real client ------------------------------------------------------------------------------------
def client(path: Path) -> LLMClient:
    return LLMClient(LLMSettings(base_url=f"replay:{path}", model="m", max_retries=0), environ={})


def agent_messages(question: str) -> list[dict]:
    return [
        {"role": "system", "content": "You are a text-to-SQL agent for PostgreSQL."},
        {"role": "user", "content": f"# Request\n\n{question}\n"},
    ]


def test_the_real_client_gets_scripted_replies_with_no_key(tmp_path):
    path = write(
        tmp_path,
        "replies:\n"
        "  - question: TH GMV in December 2025\n"
        "    times: 1\n"
        "    reply: {sql: SELECT 1}\n"
        "  - kind: agent\n"
        '    reply: \'```json\n{"sql": "SELECT 2"}\n```\'\n',
    )
    llm = client(path)
    assert llm.cache is None  # a cache would hide edits to the file
    first = llm.complete_json(agent_messages("TH GMV in December 2025"), schema=SCHEMA)
    second = llm.complete_json(agent_messages("TH GMV in December 2025"), schema=SCHEMA)
    assert first.data == {"sql": "SELECT 1"}  # `times: 1`: used once, then the next entry
    assert second.data == {"sql": "SELECT 2"} and second.parse_repaired  # the client's own fence repair ran
    assert llm.usage.calls == 2 and llm.settings.base_url == f"replay:{path}"


def test_a_request_no_entry_matches_names_its_kind_and_case(tmp_path):
    path = write(tmp_path, "replies:\n  - kind: critique\n    reply: {status: perfect, actions: []}\n")
    messages = case_messages(failure("shop-x"), globs=["kb/**"], files=[], feedback=[], secrets=())
    with pytest.raises(LLMUnavailable) as err:
        client(path).complete_json(messages, schema={"type": "object"})
    text = str(err.value)
    assert "no reply matches this request (kind repair, case shop-x, attempt 1)" in text
    assert "add an entry with kind: repair, case: shop-x" in text and str(path) in text
    assert err.value.exit_code == 2


def test_scripted_errors_go_through_the_clients_retries(tmp_path):
    path = write(
        tmp_path,
        "replies:\n  - times: 1\n    error: {status: 429, message: slow down}\n  - reply: {sql: SELECT 3}\n",
    )
    llm = LLMClient(
        LLMSettings(base_url=f"replay:{path}", max_retries=1, backoff_s=0), environ={}, sleep=lambda _: None
    )
    reply = llm.complete_json(agent_messages("q"), schema=SCHEMA)
    assert reply.data == {"sql": "SELECT 3"} and reply.usage.calls == 2


def test_an_edited_file_is_read_again(tmp_path):
    path = write(tmp_path, "replies:\n  - reply: {sql: SELECT 1}\n")
    assert client(path).complete_json(agent_messages("q"), schema=SCHEMA).data == {"sql": "SELECT 1"}
    path.write_text("replies:\n  - reply: {sql: SELECT 22}\n")
    assert client(path).complete_json(agent_messages("q"), schema=SCHEMA).data == {"sql": "SELECT 22"}
    assert json.loads(json.dumps({"ok": True}))
