"""Agent adapters without a database: predictions files, the gold self-test, reply parsing, command agents
(per case and JSON-lines), python agents, the registry, and one contract test for every adapter.

The scripts live in tests/fixtures/agents/ (see its README): they answer with the case's `instructions`.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.agents import ADAPTERS, AgentContext, Answer, make_agent
from bot.agents.base import answer_from_reply, parse_reply_text, request_for
from bot.agents.process import CommandAgent, PersistentCommandAgent, PythonAgent
from bot.agents.simple import GoldAgent, PredictionsAgent
from bot.base.errors import AgentError
from bot.base.results import CaseResult, Prediction, RunMeta, RunResult, summarize, write_run
from bot.cases.model import Case
from tests.support.fake_openai import FakeOpenAI

AGENTS = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
PY = sys.executable
# A call still running after this long is a hang: the test fails instead of blocking the run.
HANG_LIMIT_S = 60


def case(cid: str = "c1", instructions: str = "SELECT 1", *, gold: tuple[str, ...] = ("SELECT 1",)) -> Case:
    return Case(
        id=cid, question=f"question {cid}?", gold_sql=gold, db="shop", tags=("t",), instructions=instructions
    )


class _Worker:
    """One daemon thread that runs every call (the persistent agent keeps one process per thread, as the runner's
    pool threads do); a call that never returns fails the test instead of blocking the run."""

    def __init__(self) -> None:
        self.jobs: queue.Queue = queue.Queue()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, done = self.jobs.get()
            try:
                done.put((fn(), None))
            except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
                done.put((None, exc))

    def call(self, fn: Callable[[], Answer]) -> Answer:
        done: queue.Queue = queue.Queue()
        self.jobs.put((fn, done))
        try:
            result, exc = done.get(timeout=HANG_LIMIT_S)
        except queue.Empty:
            pytest.fail("the agent call hung")
        if exc is not None:
            raise exc
        return result


_WORKER = _Worker()


def bounded(fn: Callable[[], Answer]) -> Answer:
    return _WORKER.call(fn)


def ctx(timeout_s: float = 30.0, **options: object) -> AgentContext:
    return AgentContext(base_dir=str(AGENTS), options=dict(options), timeout_s=timeout_s)


def script(name: str) -> str:
    return f"{PY} {AGENTS / name}"


# --- predictions files -----------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "list.json",
            json.dumps([{"id": "c1", "sql": "SELECT 1"}, {"id": "c2", "sql": "SELECT 2"}], indent=2),
        ),
        ("dict.json", json.dumps({"c1": "SELECT 1", "c2": "SELECT 2"})),
        ("lines.jsonl", '{"id": "c1", "sql": "SELECT 1"}\n\n{"id": "c2", "sql": "SELECT 2"}\n'),
    ],
)
def test_predictions_file_forms(tmp_path: Path, name: str, text: str) -> None:
    agent = PredictionsAgent.from_file(_write(tmp_path, name, text))
    assert agent.answer(case("c1")).sql == "SELECT 1"
    assert agent.answer(case("c2")).sql == "SELECT 2"
    assert agent.name == f"predictions:{name}"


def test_predictions_ids_may_be_numbers(tmp_path: Path) -> None:
    agent = PredictionsAgent.from_file(_write(tmp_path, "p.jsonl", '{"id": 7, "sql": "SELECT 7"}\n'))
    assert agent.answer(case("7")).sql == "SELECT 7"


def test_malformed_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"id": "c1", "sql": "SELECT 1"}\n\n{"id": "c2", "sql": SELECT 2}\n')
    with pytest.raises(AgentError) as info:
        PredictionsAgent.from_file(path)
    assert (info.value.path, info.value.line) == (str(path), 3)
    assert f"{path}:3" in str(info.value)


def test_malformed_json_file_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.json", '[\n  {"id": "c1", "sql": "SELECT 1"},\n  {"id": "c2" "sql": "x"}\n]\n')
    with pytest.raises(AgentError) as info:
        PredictionsAgent.from_file(path)
    assert info.value.line == 3


def test_jsonl_line_without_sql_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"id": "c1", "sql": "SELECT 1"}\n{"id": "c2", "query": "SELECT 2"}\n')
    with pytest.raises(AgentError, match="`id` and `sql`") as info:
        PredictionsAgent.from_file(path)
    assert info.value.line == 2


def test_duplicate_prediction_id_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.jsonl", '{"id": "c1", "sql": "SELECT 1"}\n{"id": "c1", "sql": "SELECT 2"}\n')
    with pytest.raises(AgentError, match="second prediction for case 'c1'") as info:
        PredictionsAgent.from_file(path)
    assert info.value.line == 2


def test_missing_predictions_file_is_an_agent_error(tmp_path: Path) -> None:
    with pytest.raises(AgentError) as info:
        PredictionsAgent.from_file(tmp_path / "none.jsonl")
    assert info.value.path == str(tmp_path / "none.jsonl")


def test_missing_and_empty_predictions_are_recorded_not_raised(tmp_path: Path) -> None:
    agent = PredictionsAgent.from_file(
        _write(tmp_path, "p.json", '[{"id": "c1", "sql": null}, {"id": "c2", "sql": " "}]')
    )
    assert agent.answer(case("c1")).error_class == "agent_empty"
    assert agent.answer(case("c2")).error_class == "agent_empty"
    missing = agent.answer(case("c3"))
    assert (missing.sql, missing.error_class) == (None, "agent_missing")


def _run_file(tmp_path: Path) -> Path:
    cases = (
        CaseResult(id="c1", status="passed", category="query", prediction=Prediction(sql="SELECT 1")),
        CaseResult(id="c2", status="errored", category="query", prediction=Prediction(error="timeout")),
    )
    run = RunResult(meta=RunMeta(suite="s", suite_hash="h"), summary=summarize(cases), cases=cases)
    path = tmp_path / "run.json"
    write_run(path, run)
    return path


def test_predictions_from_a_saved_run(tmp_path: Path) -> None:
    agent = PredictionsAgent.from_run(_run_file(tmp_path))
    assert agent.answer(case("c1")).sql == "SELECT 1"
    assert agent.answer(case("c2")).error_class == "agent_missing"


# --- gold ------------------------------------------------------------------------------------------------------

GOLDS = ("SELECT 1", "SELECT 2", "SELECT 3")


def test_gold_agent_first_last_all() -> None:
    c = case(gold=GOLDS)
    assert GoldAgent("first").answer(c).sql == "SELECT 1"
    assert GoldAgent("last").answer(c).sql == "SELECT 3"
    every = GoldAgent("all").answer(c)
    assert (every.sql, every.alternatives) == ("SELECT 1", GOLDS)


def test_gold_agent_names_and_specs() -> None:
    assert make_agent("gold").name == "gold"
    assert make_agent("gold:last").name == "gold:last"
    assert make_agent("gold:last").answer(case(gold=GOLDS)).sql == "SELECT 3"


def test_gold_agent_declines_a_case_without_gold() -> None:
    assert GoldAgent().answer(case(gold=())).error_class == "agent_declined"


def test_gold_agent_refuses_an_unknown_choice() -> None:
    with pytest.raises(AgentError, match="gold:all"):
        make_agent("gold:random")


# --- reply parsing ---------------------------------------------------------------------------------------------


def test_answer_from_reply_forms() -> None:
    assert answer_from_reply("SELECT 1", source="x").sql == "SELECT 1"
    assert answer_from_reply("  ", source="x").error_class == "agent_empty"
    ans = answer_from_reply({"sql": "SELECT 1", "used": ["kb/a.yml:1-3"]}, source="x")
    assert (ans.sql, ans.used) == ("SELECT 1", ("kb/a.yml:1-3",))
    declined = answer_from_reply({"error": "unknown table", "used": ["kb/b.yml"]}, source="the agent")
    assert (declined.sql, declined.error_class, declined.used) == (None, "agent_declined", ("kb/b.yml",))
    assert "unknown table" in (declined.error or "")
    assert answer_from_reply(["SELECT 1"], source="x").error_class == "agent_bad_output"
    assert answer_from_reply(None, source="x").error_class == "agent_bad_output"


def test_answer_without_sql_names_the_keys_it_got() -> None:
    ans = answer_from_reply({"query": "SELECT 1", "why": "..."}, source="the agent")
    assert ans.error_class == "agent_bad_output"
    assert "query, why" in (ans.error or "")


@pytest.mark.parametrize(
    ("text", "sql"),
    [
        ('{"sql": "SELECT 1"}', "SELECT 1"),
        ('  {"sql": "SELECT 1"}\n\n', "SELECT 1"),
        ('{\n  "sql": "SELECT 1"\n}', "SELECT 1"),
        ('Thinking...\nthe table is orders\n{"sql": "SELECT 2"}', "SELECT 2"),
        ('{"sql": "SELECT 1"}\nlog: done', "SELECT 1"),  # a trailing log line is skipped
        ('{"sql": "SELECT 1"}\n{"sql": "SELECT 2"}', "SELECT 2"),  # the last JSON line wins
    ],
)
def test_parse_reply_text_finds_the_json_answer(text: str, sql: str) -> None:
    assert parse_reply_text(text, source="the agent").sql == sql


@pytest.mark.parametrize("text", ["", "   \n", "SELECT 1", "the answer is {sql: SELECT 1}"])
def test_parse_reply_text_refuses_garbage(text: str) -> None:
    ans = parse_reply_text(text, source="the agent")
    assert (ans.sql, ans.error_class) == (None, "agent_bad_output")


def test_parse_reply_text_passes_errors_and_missing_sql_through() -> None:
    assert parse_reply_text('{"error": "no idea"}', source="a").error_class == "agent_declined"
    assert parse_reply_text('{"sql": ""}', source="a").error_class == "agent_bad_output"
    assert parse_reply_text('{"answer": "SELECT 1"}', source="a").error_class == "agent_bad_output"


def test_request_never_contains_the_gold() -> None:
    req = request_for(case(gold=("SELECT secret FROM gold",)), AgentContext(options={"model": "m"}))
    assert set(req) == {"id", "question", "db", "category", "tags", "instructions", "options"}
    assert "secret" not in json.dumps(req)
    assert req["options"] == {"model": "m"}


# --- command agents, one process per case ----------------------------------------------------------------------


def test_command_agent_good_answer_keeps_stderr() -> None:
    agent = CommandAgent(script("echo_agent.py"), ctx())
    ans = bounded(lambda: agent.answer(case("c1", "SELECT 42")))
    assert (ans.sql, ans.error) == ("SELECT 42", None)
    assert "case:c1" in ans.used
    assert "thinking" in (ans.stderr or "")


def test_command_agent_runs_in_the_base_dir() -> None:
    agent = CommandAgent(f"{PY} echo_agent.py", ctx())  # a relative script path, resolved in base_dir
    assert bounded(lambda: agent.answer(case())).sql == "SELECT 1"


def test_command_agent_prints_garbage() -> None:
    ans = bounded(lambda: CommandAgent(script("garbage.py"), ctx()).answer(case()))
    assert (ans.sql, ans.error_class) == (None, "agent_bad_output")
    assert "Sure! Here is your query" in (ans.error or "")


def test_command_agent_exit_code_and_stderr_are_recorded() -> None:
    ans = bounded(lambda: CommandAgent(script("fail.py"), ctx()).answer(case()))
    assert (ans.sql, ans.error_class) == (None, "agent_crashed")
    assert "exited with code 1" in (ans.error or "")
    assert "no API key" in (ans.error or "")  # the last stderr line, in the reason
    assert "something deep down" in (ans.stderr or "")


def test_command_agent_timeout_kills_it_and_its_children() -> None:
    ans = bounded(lambda: CommandAgent(script("sleep.py"), ctx(timeout_s=1)).answer(case()))
    assert (ans.sql, ans.error_class) == (None, "agent_timeout")
    assert "within 1s" in (ans.error or "")


@pytest.mark.parametrize("agent_class", [CommandAgent, PersistentCommandAgent])
def test_command_agent_that_cannot_start_is_refused_before_the_first_case(agent_class) -> None:
    with pytest.raises(AgentError, match="/nonexistent/agent"):
        agent_class("/nonexistent/agent --flag", ctx())


def test_empty_command_is_refused() -> None:
    with pytest.raises(AgentError):
        CommandAgent("   ", ctx())


# --- command agents, one long-lived JSON-lines process ---------------------------------------------------------


def _pid(ans: Answer) -> str:
    return next(u for u in ans.used if u.startswith("pid:"))


@pytest.fixture
def lines_agent():
    agent = PersistentCommandAgent(script("lines_agent.py"), ctx(timeout_s=2))
    yield agent
    agent.close()


def test_persistent_agent_answers_twice_from_one_process(lines_agent) -> None:
    first = bounded(lambda: lines_agent.answer(case("c1", "SELECT 1")))
    second = bounded(lambda: lines_agent.answer(case("c2", "SELECT 2")))
    assert (first.sql, second.sql) == ("SELECT 1", "SELECT 2")
    assert "case:c2" in second.used
    assert _pid(first) == _pid(second)


def test_persistent_agent_crash_is_recorded_then_a_new_process_answers(lines_agent) -> None:
    before = bounded(lambda: lines_agent.answer(case("c1", "SELECT 1")))
    crashed = bounded(lambda: lines_agent.answer(case("c2", "!exit")))
    assert (crashed.sql, crashed.error_class) == (None, "agent_crashed")
    assert "code 3" in (crashed.error or "")
    after = bounded(lambda: lines_agent.answer(case("c3", "SELECT 3")))
    assert (after.sql, after.error) == ("SELECT 3", None)
    assert _pid(after) != _pid(before)


def test_persistent_agent_timeout_then_recovers(lines_agent) -> None:
    slow = bounded(lambda: lines_agent.answer(case("c1", "!sleep")))
    assert slow.error_class == "agent_timeout"
    assert bounded(lambda: lines_agent.answer(case("c2", "SELECT 2"))).sql == "SELECT 2"


def test_persistent_agent_garbage_line_is_bad_output(lines_agent) -> None:
    assert bounded(lambda: lines_agent.answer(case("c1", "!garbage"))).error_class == "agent_bad_output"
    assert bounded(lambda: lines_agent.answer(case("c2", "SELECT 2"))).sql == "SELECT 2"


def test_persistent_agent_answers_stay_with_their_case_after_a_log_line(lines_agent) -> None:
    bounded(lambda: lines_agent.answer(case("c1", "!chatty")))
    after = bounded(lambda: lines_agent.answer(case("c2", "SELECT 2")))
    assert (after.sql, "case:c2" in after.used) == ("SELECT 2", True)


# --- python agents ---------------------------------------------------------------------------------------------


def test_python_agent_from_a_file_path() -> None:
    agent = PythonAgent("py_agent.py:answer", ctx())  # relative to base_dir
    ans = bounded(lambda: agent.answer(case("c1", "SELECT 5")))
    assert (ans.sql, ans.error) == ("SELECT 5", None)
    assert "case:c1" in ans.used


def test_python_agent_from_a_module_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(AGENTS))
    agent = PythonAgent("py_agent:answer_text", AgentContext(base_dir="/"))
    assert bounded(lambda: agent.answer(case("c1", "SELECT 6"))).sql == "SELECT 6"


def test_python_agent_raising_is_a_crash_with_the_traceback() -> None:
    ans = bounded(lambda: PythonAgent("py_agent.py:answer", ctx()).answer(case("c1", "!exit")))
    assert (ans.sql, ans.error_class) == (None, "agent_crashed")
    assert "RuntimeError: the model is out of tokens" in (ans.error or "")
    assert "Traceback" in (ans.stderr or "") and "py_agent.py" in (ans.stderr or "")


def test_python_agent_timeout() -> None:
    ans = bounded(lambda: PythonAgent("py_agent.py:answer", ctx(timeout_s=1)).answer(case("c1", "!sleep")))
    assert ans.error_class == "agent_timeout"


@pytest.mark.parametrize(
    ("func", "error_class"), [("declines", "agent_declined"), ("nothing", "agent_bad_output")]
)
def test_python_agent_replies_other_than_sql(func: str, error_class: str) -> None:
    assert PythonAgent(f"py_agent.py:{func}", ctx()).answer(case()).error_class == error_class


def test_python_agent_garbage_reply() -> None:
    assert (
        PythonAgent("py_agent.py:answer", ctx()).answer(case("c1", "!garbage")).error_class
        == "agent_bad_output"
    )


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("py_agent.py", "MODULE_OR_FILE:FUNCTION"),
        ("missing.py:answer", "no such file"),
        ("py_agent.py:absent", "no function 'absent'"),
        ("sqlcanary_no_such_module_xyz:answer", "importing"),
    ],
)
def test_python_agent_load_errors(target: str, fragment: str) -> None:
    with pytest.raises(AgentError, match=fragment):
        PythonAgent(target, ctx())


# --- the registry ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["sql:gpt", "http://x", "Command:x", ""])
def test_make_agent_refuses_an_unknown_kind(spec: str) -> None:
    with pytest.raises(AgentError, match="unknown agent"):
        make_agent(spec)


@pytest.mark.parametrize("spec", ["predictions:", "command:  ", "python:", "run:"])
def test_make_agent_needs_an_argument(spec: str) -> None:
    with pytest.raises(AgentError, match="needs an argument"):
        make_agent(spec)


def test_make_agent_picks_the_persistent_command_agent_from_the_options() -> None:
    assert isinstance(
        make_agent(f"command:{PY}", AgentContext(options={"persistent": True})), PersistentCommandAgent
    )
    assert isinstance(make_agent(f"command:{PY}", AgentContext()), CommandAgent)


def test_make_agent_resolves_relative_paths_against_base_dir(tmp_path: Path) -> None:
    _write(tmp_path, "p.jsonl", '{"id": "c1", "sql": "SELECT 9"}\n')
    agent = make_agent("predictions:p.jsonl", AgentContext(base_dir=str(tmp_path)))
    assert agent.answer(case("c1")).sql == "SELECT 9"


# --- one contract for every adapter (pre-commit's habit: an explicit dict) -------------------------------------

KNOWN = case("known", "SELECT 'answer'", gold=("SELECT 'answer'",))


def _contract_specs(tmp_path: Path) -> dict[str, tuple[str, AgentContext]]:
    preds = _write(tmp_path, "preds.jsonl", json.dumps({"id": "known", "sql": "SELECT 'answer'"}) + "\n")
    run = RunResult(
        meta=RunMeta(suite="s", suite_hash="h"),
        summary=summarize(()),
        cases=(
            CaseResult(
                id="known", status="passed", category="query", prediction=Prediction(sql="SELECT 'answer'")
            ),
        ),
    )
    write_run(tmp_path / "run.json", run)
    return {
        "gold": ("gold", ctx()),
        "predictions": (f"predictions:{preds}", ctx()),
        "run": (f"run:{tmp_path / 'run.json'}", ctx()),
        "command": (f"command:{script('echo_agent.py')}", ctx()),
        "command (persistent)": (f"command:{script('lines_agent.py')}", ctx(persistent=True)),
        "python": ("python:py_agent.py:answer", ctx()),
    }


CONTRACT_KINDS = ["gold", "predictions", "run", "command", "command (persistent)", "python", "llm"]


def test_the_contract_covers_every_registered_adapter() -> None:
    assert {k.split(" ")[0] for k in CONTRACT_KINDS} == set(ADAPTERS)


@pytest.mark.parametrize("kind", CONTRACT_KINDS)
def test_every_adapter_answers_a_known_case(kind: str, tmp_path: Path) -> None:
    with FakeOpenAI([json.dumps({"sql": "SELECT 'answer'"})]) as llm_server:
        specs = _contract_specs(tmp_path)
        specs["llm"] = (
            "llm",
            AgentContext(options={"llm": {"base_url": llm_server.base_url, "cache": False}, "schema": ""}),
        )
        spec, context = specs[kind]
        _answer_known_case(spec, context)


def _answer_known_case(spec: str, context: AgentContext) -> None:
    agent = make_agent(spec, context)
    try:
        ans = bounded(lambda: agent.answer(KNOWN))
    finally:
        agent.close()
    assert isinstance(ans, Answer)
    assert (ans.sql, ans.error, ans.error_class) == ("SELECT 'answer'", None, None)
    assert isinstance(agent.name, str) and agent.name
