"""The Action's repair (bot.modes.repair) repairs the suite the check read for the head side
(`CheckResult.head_suite`): the check's process parses each side's suite once (ARCHITECTURE.md, "the check")."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType, SimpleNamespace

from bot.base.settings import Settings
from bot.cases import loader
from bot.config.model import Config, KBConfig
from bot.modes import repair
from bot.repair import request as repair_request
from bot.repair.outcome import RepairOutcome


def test_the_repair_takes_the_suite_the_check_read(tmp_path: Path, monkeypatch):
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "m.yaml").write_text("revenue: SELECT 1\n")
    config = Config(base_dir=str(tmp_path), suite="suite.yml", kb=KBConfig(paths=("kb/*.yaml",)))
    suite = object()  # the check's: passed on as it is, never read again
    asked: list[object] = []

    def parse_again(location):
        raise AssertionError(f"the suite was parsed again: {location}")

    def fake_repair(req, settings):
        asked.append(req.suite)
        return RepairOutcome.model_construct(files_changed=())

    monkeypatch.setattr(loader, "load_suite", parse_again)
    monkeypatch.setattr(repair_request, "run_repair", fake_repair)
    comparison = SimpleNamespace(overall=SimpleNamespace(base_rate=1.0), judged_as=lambda _: [])
    check = SimpleNamespace(head=None, head_suite=suite, comparison=comparison)
    settings = Settings.from_environ(MappingProxyType({"PATH": "/usr/bin"}))
    outcome, changed = repair._llm_repair(
        check,  # type: ignore[arg-type]
        config,
        settings,
        max_calls=1,
        max_minutes=1.0,
        say=lambda _: None,
    )
    assert asked == [suite] and changed == {}
