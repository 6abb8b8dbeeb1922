"""The attribution child (bot.check.causes_child): what it may see of the check's environment, and its findings
read back as validated, size-bounded data (README, "Security model")."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType, SimpleNamespace

import pytest

from bot.attribution.causal import CausalFindings
from bot.attribution.delta import Attribution, CaseCause
from bot.attribution.hunks import Change, ChangeSet
from bot.attribution.revert import RevertCandidate
from bot.base.errors import EXIT_BUG, ConfigError
from bot.base.settings import Settings
from bot.check import causes_child
from bot.check.child import child_environment
from bot.config.model import AgentConfig, Config
from bot.db.provision import Server

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
    tree = SimpleNamespace(config=Config(agent=AgentConfig(spec=spec, env=env)))
    return child_environment(settings, tree, SERVER)  # type: ignore[arg-type]


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
    back = causes_child.read_findings(path).causal()
    assert back == found
    assert back.changes.files == ("kb/m.yaml",) and back.changes.change(0).where == "line 3"


def test_findings_that_are_not_valid_or_too_large_are_a_bug(tmp_path: Path, monkeypatch):
    path = tmp_path / "findings.json"
    path.write_text('{"changes": [], "agent_calls": "many"}')
    with pytest.raises(ConfigError) as bad:
        causes_child.read_findings(path)
    assert bad.value.exit_code == EXIT_BUG
    path.write_text(causes_child.Findings.of(_found()).model_dump_json())
    monkeypatch.setattr(causes_child, "MAX_FINDINGS_BYTES", 100)
    with pytest.raises(ConfigError, match="over 100 bytes") as big:
        causes_child.read_findings(path)
    assert big.value.exit_code == EXIT_BUG
