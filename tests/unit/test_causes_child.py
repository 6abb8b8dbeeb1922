"""The attribution child (bot.check.causes_child): what it may see of the check's environment, and its findings
read back as validated, size-bounded data (README, "Security model")."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from bot.attribution.causal import CausalFindings
from bot.attribution.delta import Attribution, CaseCause
from bot.attribution.hunks import Change, ChangeSet
from bot.attribution.revert import RevertCandidate
from bot.base.errors import EXIT_BUG, ConfigError
from bot.base.settings import Settings
from bot.check import causes_child
from bot.check.apart import read_reply
from bot.check.child import child_environment
from bot.config.model import AgentConfig, Config
from bot.db.provision import Server
from tests.support.suites import one_case_suite

SECRETS = {
    "GITHUB_TOKEN": "ghs_0123456789abcdef",
    "INPUT_GITHUB-TOKEN": "ghs_0123456789abcdef",
    "INPUT_OPENAI-API-KEY": "sk-0123456789",
    "OPENAI_API_KEY": "sk-0123456789",
}
SERVER = Server(
    admin_dsn="postgresql://admin@localhost/postgres", version="16", version_num=160000, kind="dsn"
)


def _environment(spec: str, env: tuple[str, ...] = ()) -> dict[str, str]:
    environ = MappingProxyType({"PATH": "/usr/bin", "SQLCANARY_CACHE_DIR": "/c", "AGENT_VAR": "x", **SECRETS})
    settings = Settings.from_environ(environ)
    return child_environment(settings, Config(agent=AgentConfig(spec=spec, env=env)), SERVER)


def test_the_attribution_child_sees_no_token_and_no_key_its_agent_is_not_given():
    env = _environment("command:python agent.py", env=("AGENT_VAR",))
    assert not SECRETS.keys() & env.keys()
    assert env["AGENT_VAR"] == "x" and env["SQLCANARY_CACHE_DIR"] == "/c"
    assert env["DATABASE_URL"] == SERVER.admin_dsn


def test_the_built_in_agent_gets_the_llm_key_the_base_config_names_and_nothing_else():
    env = _environment("llm")
    assert env["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"]
    assert not {"GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "INPUT_OPENAI-API-KEY"} & env.keys()


def _found() -> CausalFindings:
    change = Change(
        id=0, file="kb/m.yaml", old_start=3, old_lines=("a: 1\n",), new_start=3, new_lines=("a: 2\n",)
    )
    attribution = Attribution(
        changes=(change,), cases=(CaseCause(id="revenue", verdict="caused", changes=(0,), asked=2),), asked=2
    )
    revert = RevertCandidate(holds=True, reverted=(change,), files={"kb/m.yaml": "a: 1\n"}, agent_calls=3)
    changes = ChangeSet(changes=(change,), base={"kb/m.yaml": "a: 1\n"}, head={"kb/m.yaml": "a: 2\n"})
    return CausalFindings(
        changes=changes, attribution=attribution, revert=revert, agent_calls=5, sandbox="uid 7"
    )


def test_findings_come_back_as_they_were_found(tmp_path: Path):
    found = _found()
    path = tmp_path / "findings.json"
    path.write_text(causes_child.Findings.of(found).model_dump_json())
    back = read_reply(path, causes_child.Findings, max_bytes=causes_child.MAX_FINDINGS_BYTES).causal()
    assert back == found
    assert back.changes.files == ("kb/m.yaml",) and back.changes.change(0).where == "line 3"


def test_findings_that_are_not_valid_or_too_large_are_a_bug(tmp_path: Path):
    path = tmp_path / "findings.json"
    path.write_text('{"changes": [], "agent_calls": "many"}')
    with pytest.raises(ConfigError) as bad:
        read_reply(path, causes_child.Findings, max_bytes=causes_child.MAX_FINDINGS_BYTES)
    assert bad.value.exit_code == EXIT_BUG
    path.write_text(causes_child.Findings.of(_found()).model_dump_json())
    with pytest.raises(ConfigError, match="over 100 bytes") as big:
        read_reply(path, causes_child.Findings, max_bytes=100)
    assert big.value.exit_code == EXIT_BUG


def test_the_request_travels_as_json_and_comes_back_the_same_request(tmp_path: Path):
    """No pickle between the two processes: the child rebuilds the request from validated JSON."""
    from bot.attribution.causal import CauseRequest
    from bot.attribution.head_agent import AgentSetup
    from bot.compare.diff import FileDiff, Hunk

    suite = one_case_suite(tmp_path)
    diff = (FileDiff(path="kb/m.yaml", hunks=(Hunk(old_start=3, old_count=1, new_start=3, new_count=1),)),)
    agent = AgentSetup(spec="command:python agent.py", base_dir=str(tmp_path), timeout_s=9.0)
    req = CauseRequest(
        diff,
        config=Config(agent=AgentConfig(spec="command:python agent.py")),
        base_root=tmp_path / "base",
        head_root=tmp_path,
        suite=suite,
        head={"revenue": "failed"},
        regressed=["revenue"],
        agent=agent,
        base_pass_rate=0.5,
        max_agent_calls=7,
    )
    job = causes_child.CauseJob.of(req, SERVER)
    back = causes_child.CauseJob.model_validate_json(job.model_dump_json())
    again = back.request()
    assert back.server == SERVER and again.suite == suite and again.agent == agent
    assert (again.diff, again.config, again.head, tuple(again.regressed)) == (
        diff,
        req.config,
        req.head,
        ("revenue",),
    )
    assert (again.base_pass_rate, again.max_agent_calls, again.head_root) == (0.5, 7, tmp_path)


def test_the_repair_child_gets_the_repair_model_s_key_and_no_token(tmp_path: Path):
    """The repair loop's child (bot.check.repair_child) asks the base config's model with its key: that key and
    the head's allow-listed environment, never a GitHub token nor an input."""
    from bot.check.repair_child import repair_environment

    environ = MappingProxyType({"PATH": "/usr/bin", "SQLCANARY_CACHE_DIR": "/c", **SECRETS})
    env = repair_environment(
        Settings.from_environ(environ), Config(agent=AgentConfig(spec="command:a")), SERVER
    )
    assert env["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"] and env["DATABASE_URL"] == SERVER.admin_dsn
    assert not {"GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "INPUT_OPENAI-API-KEY"} & env.keys()
