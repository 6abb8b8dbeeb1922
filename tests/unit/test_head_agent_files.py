"""The files a head's `agent:` names are settled by its reader (bot.check.head_agent_files): `schema_file` read
and handed on as text, a `predictions:`/`run:` file kept inside the checkout, never through a link out of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.errors import ConfigError
from bot.check.head_agent_files import settle_agent_files
from bot.config.model import AgentConfig, Config


def config(checkout: Path, spec: str, **options: object) -> Config:
    folder = checkout / "evals"
    folder.mkdir(exist_ok=True)
    return Config(
        base_dir=str(folder),
        config_file=str(folder / "sqlcanary.yml"),
        agent=AgentConfig(spec=spec, options=dict(options)),
    )


def test_a_schema_file_is_handed_on_as_text_and_never_as_a_path(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "shop.ddl").write_text("CREATE TABLE t (x int);")
    settled = settle_agent_files(config(tmp_path, "llm", schema_file="shop.ddl", model="m"), tmp_path)
    assert settled.agent is not None
    assert settled.agent.options == {"schema": "CREATE TABLE t (x int);", "model": "m"}


def test_per_database_schema_files_are_read_each(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "a.ddl").write_text("A")
    (tmp_path / "evals" / "b.ddl").write_text("B")
    settled = settle_agent_files(config(tmp_path, "llm", schema_file={"a": "a.ddl", "b": "b.ddl"}), tmp_path)
    assert settled.agent is not None and settled.agent.options["schema"] == {"a": "A", "b": "B"}


@pytest.mark.parametrize("kind", ["predictions", "run"])
def test_a_file_agent_in_the_checkout_gets_its_resolved_path(tmp_path, kind):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "p.jsonl").write_text("")
    settled = settle_agent_files(config(tmp_path, f"{kind}:p.jsonl"), tmp_path)
    assert settled.agent is not None
    assert settled.agent.spec == f"{kind}:{(tmp_path / 'evals' / 'p.jsonl').resolve()}"


@pytest.mark.parametrize(
    ("spec", "options"),
    [
        ("predictions:/etc/hostname", {}),
        ("run:../../outside.json", {}),
        ("predictions:link.jsonl", {}),
        ("llm", {"schema_file": "/proc/self/environ"}),
        ("llm", {"schema_file": "link.jsonl"}),
        ("llm", {"schema_file": {"shop": "../../outside.json"}}),
    ],
    ids=["absolute", "dotdot", "link-out", "proc-self", "schema-link-out", "schema-per-db"],
)
def test_a_file_outside_the_checkout_is_refused_naming_it(tmp_path, spec, options):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "outside.json").write_text("{}")
    cfg = config(checkout, spec, **options)
    (checkout / "evals" / "link.jsonl").symlink_to(tmp_path / "outside.json")
    with pytest.raises(ConfigError, match="outside the pull request's checkout") as info:
        settle_agent_files(cfg, checkout)
    assert info.value.path == cfg.config_file


def test_other_agents_are_unchanged(tmp_path):
    cfg = config(tmp_path, "command:python3 agent.py", schema_file="/etc/passwd")
    assert settle_agent_files(cfg, tmp_path) == cfg
