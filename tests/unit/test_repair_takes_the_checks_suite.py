"""The Action's repair (bot.modes.repair) repairs the suite the check read for the head side
(`CheckResult.head_suite`): the check's process parses each side's suite once (ARCHITECTURE.md, "the check"),
and hands it to the repair loop's child as data (bot.check.repair_child)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType, SimpleNamespace

from bot.base.settings import Settings
from bot.cases import loader
from bot.cases.suite_doc import SuiteDoc
from bot.check import repair_child
from bot.config.model import Config, KBConfig
from bot.db.provision import Server
from bot.modes import repair
from bot.repair.outcome import RepairOutcome
from bot.run import server as run_server
from tests.support.suites import one_case_suite


def test_the_repair_takes_the_suite_the_check_read(tmp_path: Path, monkeypatch):
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "m.yaml").write_text("revenue: SELECT 1\n")
    config = Config(base_dir=str(tmp_path), suite="suite.yml", kb=KBConfig(paths=("kb/*.yaml",)))
    suite = one_case_suite(tmp_path)  # the check's: passed on as it is, never read again
    asked: list[object] = []

    def parse_again(location):
        raise AssertionError(f"the suite was parsed again: {location}")

    def child(module, job, reply_model, **kwargs):
        asked.append((module, job.suite))
        return reply_model(outcome=RepairOutcome.model_construct(files_changed=()), changed={})

    monkeypatch.setattr(loader, "load_suite", parse_again)
    monkeypatch.setattr(repair_child, "run_apart", child)
    server = Server(
        admin_dsn="postgresql://a@localhost/postgres", version="16", version_num=160000, kind="dsn"
    )
    monkeypatch.setattr(run_server, "provision_server", lambda *a, **k: server)
    comparison = SimpleNamespace(overall=SimpleNamespace(base_rate=1.0), judged_as=lambda _: [])
    check = SimpleNamespace(head=None, head_suite=suite, comparison=comparison)
    settings = Settings.from_environ(MappingProxyType({"PATH": "/usr/bin"}))
    monkeypatch.setattr(repair_child, "RepairJob", SimpleNamespace)  # the fake run has no run to validate
    outcome, changed = repair._llm_repair(
        check,  # type: ignore[arg-type]
        config,
        settings,
        max_calls=1,
        max_minutes=1.0,
        cwd=tmp_path,
        say=lambda _: None,
    )
    assert asked == [("bot.check.repair_child", SuiteDoc.of(suite))] and changed == {}
