"""`run --llm-judge`: failing cases get the LLM's opinion as a diagnostic verdict; it never decides a case."""

from __future__ import annotations

import json

import yaml

from bot.base.results import read_run
from bot.cli import main
from tests.support.fake_openai import FakeOpenAI


def test_llm_judge_adds_a_verdict_to_failing_cases_only(tmp_path, pg_dsn, capsys):
    (tmp_path / "t.sql").write_text("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2), (3);\n")
    cases = [
        {"id": "right", "question": "How many rows?", "gold_sql": "SELECT count(*) FROM t"},
        {"id": "wrong", "question": "What is the largest x?", "gold_sql": "SELECT max(x) FROM t"},
    ]
    (tmp_path / "suite.yml").write_text(yaml.safe_dump({"databases": {"j": "t.sql"}, "cases": cases}))
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"id": "right", "sql": "SELECT count(x) FROM t"})
        + "\n"
        + json.dumps({"id": "wrong", "sql": "SELECT min(x) FROM t"})
        + "\n"
    )
    verdict = {"equivalent": True, "confidence": "low", "reason": "both aggregate x"}
    with FakeOpenAI([json.dumps(verdict)]) as llm:
        (tmp_path / "sqlcanary.yml").write_text(
            yaml.safe_dump(
                {"suite": ".", "llm": {"base_url": llm.base_url, "model": "judge-model", "cache": False}}
            )
        )
        out = tmp_path / "run.json"
        rc = main(
            [
                "run",
                str(tmp_path),
                "--agent",
                f"predictions:{preds}",
                "--dsn",
                pg_dsn,
                "--out",
                str(out),
                "--llm-judge",
                "-q",
            ]
        )
        requests = list(llm.completions)
    assert rc == 0
    run = read_run(out)
    cases_by_id = {c.id: c for c in run.cases}
    # what the judge cost is the run's record too, beside (never inside) the agent's
    assert run.meta.llm is None and run.meta.llm_judge is not None
    assert (run.meta.llm_judge.model, run.meta.llm_judge.calls, run.meta.llm_judge.parse_ok) == (
        "judge-model",
        1,
        1,
    )
    assert "--llm-judge: LLM judge-model: 1 request(s)" in capsys.readouterr().out
    assert "llm_judge" not in cases_by_id["right"].verdicts
    wrong = cases_by_id["wrong"]
    assert wrong.status == "failed", "the judge's opinion never overrides the execution verdict"
    assert wrong.verdicts["llm_judge"].match is True
    assert len(requests) == 1, "one call per failing case, none for passing ones"
    prompt = json.dumps(requests[0].json)
    assert "SELECT max(x) FROM t" in prompt and "SELECT min(x) FROM t" in prompt
