"""Command agents that break the stdout protocol, on real processes: bytes that are not UTF-8, a flood, a closed
stdout, a crash mid-line. Each case ends `errored` with a reason that says what happened, at once: the agents get a
timeout far longer than the misbehaviour needs, and the reason must not be the timeout's. A long-lived agent that
broke is replaced by a new process for the next case. A command that cannot start fails when the agent is made.

The scripts are tests/fixtures/agents/echo_agent.py and lines_agent.py; misbehave.py holds the misbehaviours.
"""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

from bot.agents import AgentContext, Answer, make_agent
from bot.agents.process import CommandAgent, PersistentCommandAgent
from bot.base.errors import AgentError
from tests.unit.test_agents import AGENTS, PY, bounded, case, script

_MISBEHAVE = runpy.run_path(str(AGENTS / "misbehave.py"))
LATIN1_OFFSET: int = _MISBEHAVE["LATIN1_OFFSET"]
HALF_LINE: str = _MISBEHAVE["HALF_LINE"]

LONG_S = 45.0  # far longer than any misbehaviour here needs; shorter than the tests' hang limit (60 s)


def long_ctx(base_dir: Path = AGENTS) -> AgentContext:
    return AgentContext(base_dir=str(base_dir), timeout_s=LONG_S)


def one_shot(instructions: str) -> Answer:
    agent = CommandAgent(script("echo_agent.py"), long_ctx())
    return bounded(lambda: agent.answer(case("c1", instructions)))


@pytest.fixture
def persistent():
    agent = PersistentCommandAgent(script("lines_agent.py"), long_ctx())
    yield agent
    agent.close()


def _pid(ans: Answer) -> str:
    return next(u for u in ans.used if u.startswith("pid:"))


def _errored(ans: Answer, error_class: str, *fragments: str) -> None:
    assert ans.sql is None, ans
    assert ans.error_class == error_class, ans.error
    assert "did not answer within" not in (ans.error or "")  # noticed at once, not at the timeout
    for fragment in fragments:
        assert fragment in (ans.error or ""), ans.error


# --- the misbehaviours, one process per case ---------------------------------------------------------------------

ONE_SHOT = {
    "!latin1": ("agent_bad_output", ("not UTF-8", f"at offset {LATIN1_OFFSET} ")),
    "!huge": ("agent_bad_output", ("larger than 1 MiB",)),
    "!close": ("agent_crashed", ("closed its stdout", "kept running")),
    "!halfline": ("agent_crashed", ("exited with code 4", "middle of a line", "segfault while printing")),
}


@pytest.mark.parametrize("instructions", list(ONE_SHOT))
def test_one_shot_misbehaviour_is_errored_with_a_reason(instructions: str) -> None:
    error_class, fragments = ONE_SHOT[instructions]
    _errored(one_shot(instructions), error_class, *fragments)


def test_one_shot_stderr_tail_is_kept_on_a_crash() -> None:
    ans = one_shot("!halfline")
    assert "segfault while printing" in (ans.stderr or "")
    assert "thinking" in (ans.stderr or "")


def test_one_shot_answer_then_closed_stdout_counts() -> None:
    """The answer is complete once stdout closes; a process that lingers afterwards is stopped, not waited for."""
    ans = one_shot("!linger")
    assert (ans.sql, ans.error) == ("SELECT 'lingered'", None)


def test_one_shot_sql_is_never_repaired() -> None:
    ans = one_shot("!latin1")
    assert "\ufffd" not in (ans.error or "") and ans.sql is None


# --- the same, one long-lived process ----------------------------------------------------------------------------

PERSISTENT = {
    "!latin1": ("agent_bad_output", ("not UTF-8", f"at offset {LATIN1_OFFSET} ")),
    "!huge": ("agent_bad_output", ("larger than 1 MiB",)),
    "!chatter": ("agent_bad_output", ("larger than 1 MiB",)),
    "!close": ("agent_crashed", ("closed its stdout", "kept running", "closing stdout")),
    "!halfline": ("agent_crashed", ("exited with code 4", "middle of a line", "segfault while printing")),
    "!exit": ("agent_crashed", ("exited with code 3", "lines agent: crashing")),
}


@pytest.mark.parametrize("instructions", list(PERSISTENT))
def test_persistent_misbehaviour_is_errored_then_a_new_process_answers(persistent, instructions: str) -> None:
    before = bounded(lambda: persistent.answer(case("c1", "SELECT 1")))
    broken = bounded(lambda: persistent.answer(case("c2", instructions)))
    error_class, fragments = PERSISTENT[instructions]
    _errored(broken, error_class, *fragments)
    after = bounded(lambda: persistent.answer(case("c3", "SELECT 3")))
    assert (after.sql, after.error) == ("SELECT 3", None)
    assert "case:c3" in after.used
    assert _pid(after) != _pid(before)


def test_persistent_crash_mid_line_quotes_the_cut_line(persistent) -> None:
    ans = bounded(lambda: persistent.answer(case("c1", "!halfline")))
    assert HALF_LINE[-20:] in (ans.error or "")
    assert "segfault while printing" in (ans.stderr or "")


def _ask_persistent(tmp_path: Path, source: str, *ids: str) -> list[Answer]:
    """A persistent agent from `source`, asked for each case id in turn, then closed."""
    (tmp_path / "agent_under_test.py").write_text(source)
    agent = PersistentCommandAgent(f"{PY} agent_under_test.py", long_ctx(tmp_path))
    try:
        return [bounded(lambda i=i: agent.answer(case(i))) for i in ids]
    finally:
        agent.close()


def test_persistent_answer_without_a_final_newline_counts(tmp_path: Path) -> None:
    source = (
        "import json, sys\n"
        "request = json.loads(sys.stdin.readline())\n"
        "sys.stdout.write(json.dumps({'sql': 'SELECT 7'}))\n"
    )
    [ans] = _ask_persistent(tmp_path, source, "c1")
    assert (ans.sql, ans.error) == ("SELECT 7", None)


def test_persistent_stderr_written_before_the_answer_is_kept_whatever_the_drainer_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent logs, then answers: the log is in the pipe when the answer is read. The drainer thread is
    stopped here (as if the scheduler had not run it yet), so the log must be read by the answer's own read."""
    from bot.agents.line_process import LineProcess

    monkeypatch.setattr(LineProcess, "_drain_stderr", lambda self: None)
    source = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    request = json.loads(line)\n"
        "    print('log: thinking about', request['id'], file=sys.stderr, flush=True)\n"
        "    print(json.dumps({'id': request['id'], 'sql': 'SELECT 1'}), flush=True)\n"
    )
    first, second = _ask_persistent(tmp_path, source, "c1", "c2")
    assert first.sql == "SELECT 1" and "log: thinking about c1" in (first.stderr or "")
    assert "log: thinking about c2" in (second.stderr or "")


# --- a command that cannot start ---------------------------------------------------------------------------------


@pytest.mark.parametrize("persistent_option", [False, True])
def test_a_missing_program_fails_when_the_agent_is_made(persistent_option: bool, tmp_path: Path) -> None:
    context = AgentContext(base_dir=str(tmp_path), options={"persistent": persistent_option})
    with pytest.raises(AgentError) as info:
        make_agent("command:no-such-binary --fast", context)
    assert "no-such-binary" in str(info.value) and str(tmp_path) in str(info.value)


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{PY}\n{body}")
    path.chmod(0o755)
    return path


ANSWER_BODY = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'sql': 'SELECT 8'}))\n"


@pytest.mark.parametrize("argv0", ["./agent.py", "agents/run.py", "agent.py"])
def test_relative_programs_resolve_against_base_dir_not_the_cwd(
    argv0: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    _executable(project / argv0, ANSWER_BODY)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    agent = make_agent(f"command:{argv0}", AgentContext(base_dir=str(project), timeout_s=LONG_S))
    assert bounded(lambda: agent.answer(case("c1"))).sql == "SELECT 8"


def test_a_relative_program_in_the_cwd_only_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _executable(tmp_path / "cwd" / "agent.py", ANSWER_BODY)
    (tmp_path / "config").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    with pytest.raises(AgentError) as info:
        make_agent("command:./agent.py", AgentContext(base_dir=str(tmp_path / "config")))
    assert "./agent.py" in str(info.value) and str(tmp_path / "config") in str(info.value)


def test_a_program_that_is_not_executable_is_refused(tmp_path: Path) -> None:
    (tmp_path / "agent.sh").write_text("#!/bin/sh\necho '{}'\n")
    os.chmod(tmp_path / "agent.sh", 0o644)
    with pytest.raises(AgentError, match="not executable") as info:
        make_agent("command:./agent.sh", AgentContext(base_dir=str(tmp_path)))
    assert str(tmp_path) in str(info.value)


def test_unbalanced_quotes_are_refused() -> None:
    with pytest.raises(AgentError, match="cannot split"):
        make_agent(f"command:{PY} 'oops", AgentContext())
