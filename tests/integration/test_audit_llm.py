"""`sqlcanary audit --llm` on a real PostgreSQL with a scripted local LLM (tests/support/fake_openai.py): a question
the LLM says its gold does not answer is listed as an `llm_hint` (low confidence, never counted by `--strict`); an
LLM that keeps answering nonsense or 429 stops the audit with exit 2 naming the case, after the client's own
re-ask and retries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from tests.support.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.integration

FIXTURE = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, country text NOT NULL);
INSERT INTO customers VALUES (1, 'Ada', 'UK'), (2, 'Grace', 'US'), (3, 'Linus', 'FI');
"""
CASES = [
    {
        "id": "fine",
        "question": "Customers in the US?",
        "gold_sql": "SELECT name FROM customers WHERE country = 'US'",
    },
    {
        "id": "outside",
        "question": "Customers outside the US?",
        "gold_sql": "SELECT name FROM customers WHERE country = 'US'",
    },
]


def _suite(root: Path, base_url: str) -> Path:
    (root / "shop.sql").write_text(FIXTURE)
    doc = {"name": "hinted", "databases": {"shop": "shop.sql"}, "cases": CASES}
    (root / "suite.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    llm = {"base_url": base_url, "model": "audit-model", "cache": False, "max_retries": 1, "backoff_s": 0}
    (root / "sqlcanary.yml").write_text(yaml.safe_dump({"suite": ".", "llm": llm}))
    return root


def _opinion(request: dict) -> str:
    prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    if "outside the US" in prompt:
        return json.dumps(
            {"match": False, "reason": "the gold keeps the US customers, the question excludes them"}
        )
    return json.dumps({"match": True, "reason": "it filters on the US"})


def test_a_mismatch_is_a_low_hint_that_strict_does_not_count(tmp_path, pg_dsn, capsys):
    with FakeOpenAI(_opinion) as llm:
        suite = _suite(tmp_path, llm.base_url)
        out = tmp_path / "audit.json"
        argv = ["audit", str(suite), "--dsn", pg_dsn, "-q", "--llm", "--strict", "--format", "json"]
        assert main([*argv, "--out", str(out)]) == 0  # a hint never fails --strict
        prompts = [r.prompt_text for r in llm.requests if r.path.endswith("/chat/completions")]
    report = json.loads(out.read_text())
    hints = [s for s in report["suspects"] if s["kind"] == "llm_hint"]
    assert [(s["case_id"], s["confidence"]) for s in hints] == [("outside", "low")]
    assert "excludes them" in hints[0]["evidence"]["reason"] and hints[0]["message"].startswith("hint")
    assert len(prompts) == 2 and any(
        "Customers outside the US?" in p and "country = 'US'" in p for p in prompts
    )
    assert any("Grace" in p for p in prompts)  # the gold's rows are shown to the LLM


def test_text_output_labels_the_hint(tmp_path, pg_dsn, capsys):
    with FakeOpenAI(_opinion) as llm:
        suite = _suite(tmp_path, llm.base_url)
        assert main(["audit", str(suite), "--dsn", pg_dsn, "-q", "--llm"]) == 0
    text = capsys.readouterr().out
    assert "outside: llm_hint [low]" in text and "hint (an LLM's opinion" in text


def test_without_llm_nothing_is_asked(tmp_path, pg_dsn):
    with FakeOpenAI(_opinion) as llm:
        suite = _suite(tmp_path, llm.base_url)
        assert main(["audit", str(suite), "--dsn", pg_dsn, "-q", "--format", "json"]) == 0
        assert [r for r in llm.requests if r.path.endswith("/chat/completions")] == []


@pytest.mark.parametrize(
    "reply",
    [Reply(content="I think it is fine"), Reply(status=429, headers={"Retry-After": "0"})],
    ids=["not-json", "429"],
)
def test_an_llm_that_cannot_answer_exits_2_naming_the_case(tmp_path, pg_dsn, capsys, reply):
    with FakeOpenAI([reply]) as llm:
        suite = _suite(tmp_path, llm.base_url)
        rc = main(["audit", str(suite), "--dsn", pg_dsn, "-q", "--llm", "--jobs", "1", "--id", "outside"])
        asked = len([r for r in llm.requests if r.path.endswith("/chat/completions")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "case outside" in err and "suite.yml" in err and "Traceback" not in err
    assert asked == 2  # the client's re-ask (not JSON) or its one retry (429), then the error
