"""Issue 17, item 8: `sqlcanary repair --max-llm-calls 3` that spends its budget says so naming the flag the user
gave, not the config key `llm.budget.max_calls` they never set. The shop with a planted regression and a scripted
OpenAI-compatible server that never answers with a usable plan, so every call is spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.integration.test_repair import broken_shop, shop  # noqa: F401 (fixtures)
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.integration


def test_the_spent_budget_names_max_llm_calls(shop, pg_dsn: str, tmp_path: Path, monkeypatch, capsys) -> None:  # noqa: F811
    root, run = shop
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    run_file = tmp_path / "run.json"
    run_file.write_text(run.model_dump_json())
    out = tmp_path / "out"
    with FakeOpenAI(["no JSON here, sorry"] * 10) as srv:
        monkeypatch.setenv("SQLCANARY_LLM_BASE_URL", srv.base_url)
        argv = ["repair", str(run_file), "--config", str(root / "sqlcanary.yml"), "--dsn", pg_dsn]
        main([*argv, "--out", str(out), "--max-llm-calls", "3", "--max-retries", "10", "-q"])
        sent = len(srv.completions)
    assert sent <= 3
    stopped = json.loads((out / "outcome.json").read_text())["stopped"]
    assert "--max-llm-calls 3" in stopped and "llm.budget.max_calls" not in stopped
    printed = capsys.readouterr()
    assert "llm.budget.max_calls" not in printed.out + printed.err
