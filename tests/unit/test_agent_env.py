"""The environment a command agent gets (bot.agents.env): an allow list plus the names the config's `agent.env`
gives, never the tokens of the Action's environment; and secrets masked out of whatever an agent answers."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from bot.agents import AgentContext, make_agent
from bot.agents.base import Answer, scrub_answer
from bot.agents.env import agent_environment
from bot.agents.pipes import resolve_argv
from bot.base.errors import AgentError, ConfigError
from bot.base.secrets import MASK
from bot.cases.model import Case

PY = sys.executable
TOKEN = "ghs_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
ACTIONS_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/github/home",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TMPDIR": "/tmp",
    "VIRTUAL_ENV": "/opt/venv",
    "MODEL": "gpt-test",
    "GITHUB_TOKEN": TOKEN,
    "INPUT_GITHUB-TOKEN": TOKEN,
    "INPUT_X": "anything",
    "INPUT_OPENAI-API-KEY": "sk-test-input-key",
    "OPENAI_API_KEY": "sk-test-key",
    "ACTIONS_RUNTIME_TOKEN": "runtime-token",
    "ACTIONS_CACHE_URL": "https://cache.example/",
    "DATABASE_URL": "postgresql://u:dbpass-123@db/shop",
    "HTTPS_PROXY": "http://u:proxy-pass@proxy:3128",
    "LC_API_KEY": "not-a-locale",
}


def case(instructions: str = "SELECT 1") -> Case:
    return Case(id="c1", question="q?", gold_sql=("SELECT 1",), db="shop", instructions=instructions)


def test_only_the_base_names_and_the_named_ones_pass() -> None:
    env = agent_environment(ACTIONS_ENV, allow=("MODEL", "NOT_SET"))
    assert env == {
        "PATH": ACTIONS_ENV["PATH"],
        "HOME": "/github/home",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
        "VIRTUAL_ENV": "/opt/venv",
        "MODEL": "gpt-test",
    }


def test_a_named_secret_is_the_users_decision() -> None:
    env = agent_environment(ACTIONS_ENV, allow=("OPENAI_API_KEY",))
    assert env["OPENAI_API_KEY"] == "sk-test-key"
    assert "GITHUB_TOKEN" not in env and "INPUT_OPENAI-API-KEY" not in env and "DATABASE_URL" not in env


FORBIDDEN = ["GITHUB_TOKEN", "GITHUB_OUTPUT", "ACTIONS_RUNTIME_TOKEN", "INPUT_OPENAI-API-KEY", "RUNNER_TEMP"]


@pytest.mark.parametrize(
    "name", [*FORBIDDEN, "DATABASE_URL", "PGPASSWORD", "SQLCANARY_CACHE_DIR", "github_env"]
)
def test_runner_and_database_credentials_can_never_be_named(name: str) -> None:
    with pytest.raises(ConfigError, match=f"agent.env: '{name}' can never be passed"):
        agent_environment(ACTIONS_ENV, allow=("MODEL", name))


PRINT_ENV = """
import json, os, sys
request = json.loads(sys.stdin.readline())
with open(request["options"]["out"], "w") as f:
    json.dump(dict(os.environ), f)
print(json.dumps({"id": request["id"], "sql": "SELECT 1"}), flush=True)
"""


@pytest.mark.parametrize("persistent", [False, True])
def test_a_command_agent_sees_only_its_allowed_environment(tmp_path: Path, persistent: bool) -> None:
    (tmp_path / "agent.py").write_text(PRINT_ENV, encoding="utf-8")
    out = tmp_path / "env.json"
    env = agent_environment(ACTIONS_ENV, allow=("MODEL",))
    options = {"out": str(out), "persistent": persistent}
    agent = make_agent(
        f"command:{PY} agent.py", AgentContext(base_dir=str(tmp_path), options=options, env=env)
    )
    try:
        assert agent.answer(case()).sql == "SELECT 1"
    finally:
        agent.close()
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["PATH"] == ACTIONS_ENV["PATH"] and seen["MODEL"] == "gpt-test"
    leaked = {
        "GITHUB_TOKEN",
        "INPUT_GITHUB-TOKEN",
        "INPUT_X",
        "INPUT_OPENAI-API-KEY",
        "OPENAI_API_KEY",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_CACHE_URL",
        "DATABASE_URL",
        "HTTPS_PROXY",
        "LC_API_KEY",
    }
    assert leaked.isdisjoint(seen)
    assert TOKEN not in json.dumps(seen)


def test_without_an_env_the_agent_inherits_nothing_of_sqlcanarys_own(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SQLCANARY_TEST_INHERITED", "yes")
    (tmp_path / "agent.py").write_text(PRINT_ENV, encoding="utf-8")
    out = tmp_path / "env.json"
    agent = make_agent(
        f"command:{PY} agent.py", AgentContext(base_dir=str(tmp_path), options={"out": str(out)})
    )
    assert agent.answer(case()).sql == "SELECT 1"
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert "SQLCANARY_TEST_INHERITED" not in seen and seen["PATH"] == os.defpath  # bot.base.childenv


def test_a_bare_program_name_is_looked_up_on_the_agents_path(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    program = tools / "sqlcanary-test-agent"
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    assert resolve_argv("sqlcanary-test-agent --x", str(tmp_path), env={"PATH": str(tools)}) == [
        "sqlcanary-test-agent",
        "--x",
    ]
    with pytest.raises(AgentError, match="not found on PATH"):
        resolve_argv("sqlcanary-test-agent", str(tmp_path), env={"PATH": str(tmp_path)})
    with pytest.raises(AgentError, match="not found on PATH"):  # on sqlcanary's PATH, but not on the agent's
        resolve_argv("sh", str(tmp_path), env={"PATH": str(tmp_path)})


def test_repr_of_a_context_shows_no_secret_and_no_environment() -> None:
    text = repr(AgentContext(env={"GITHUB_TOKEN": TOKEN}, secrets=(TOKEN,)))
    assert TOKEN not in text and "GITHUB_TOKEN" not in text


# --- secrets masked at the agent boundary -----------------------------------------------------------------------

LEAKY = """
import json, sys
request = json.loads(sys.stdin.readline())
leak = request["options"]["leak"]
print(f"debug: authenticating with {leak}", file=sys.stderr)
if request["options"].get("crash"):
    print(f"fatal: bad credentials {leak}", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"id": request["id"], "error": f"401 for token {leak}", "used": [f"kb/{leak}.yml:1"]}))
"""


@pytest.mark.parametrize("crash", [False, True])
@pytest.mark.parametrize("persistent", [False, True])
def test_command_agent_answers_are_masked(tmp_path: Path, crash: bool, persistent: bool) -> None:
    (tmp_path / "agent.py").write_text(LEAKY, encoding="utf-8")
    options = {"leak": TOKEN, "crash": crash, "persistent": persistent}
    ctx = AgentContext(base_dir=str(tmp_path), options=options, secrets=(TOKEN,))
    agent = make_agent(f"command:{PY} agent.py", ctx)
    try:
        answer = agent.answer(case())
    finally:
        agent.close()
    assert answer.error and answer.stderr
    assert TOKEN not in f"{answer.error}{answer.stderr}{answer.used}"
    assert MASK in answer.error and f"authenticating with {MASK}" in answer.stderr


def test_python_agent_tracebacks_are_masked(tmp_path: Path) -> None:
    (tmp_path / "leaky.py").write_text(
        "def answer(request):\n    raise RuntimeError('token ' + request['options']['leak'])\n",
        encoding="utf-8",
    )
    ctx = AgentContext(base_dir=str(tmp_path), options={"leak": TOKEN}, secrets=(TOKEN,))
    answer = make_agent("python:leaky.py:answer", ctx).answer(case())
    assert answer.error_class == "agent_crashed" and answer.stderr and "RuntimeError" in answer.stderr
    assert TOKEN not in f"{answer.error}{answer.stderr}"


def test_scrub_answer_masks_sql_too_and_is_a_no_op_without_secrets() -> None:
    answer = Answer(sql=f"SELECT '{TOKEN}'", error=None, stderr=None)
    assert scrub_answer(answer, ()) is answer
    assert scrub_answer(answer, (TOKEN,)).sql == f"SELECT '{MASK}'"
