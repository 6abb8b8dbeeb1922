"""Issue 27 through `sqlcanary check`: a `command:` agent that reports `usage`. A head that doubles every
answer's tokens and cost and keeps every verdict fails `gate.max_cost_increase: 20%`, named by the metric and its
cases; an unchanged head passes; the same agent twice never fails on latency noise; the comment and the job
summary show the metrics, and the outputs carry them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.cli import main
from bot.compare.comparison import Comparison
from tests.support.tinyrepo import AGENT, CONFIG, GOOD, config, git, make_tiny_repo

pytestmark = pytest.mark.integration

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)

# The tiny repository's agent, reporting what data/usage.json says each answer cost.
METERED = AGENT.replace(
    'print(json.dumps({"sql": answer, "used": ["../../data/answers.json:1"]}))',
    'usage = json.loads((pathlib.Path(__file__).resolve().parents[2] / "data" / "usage.json").read_text())\n'
    'print(json.dumps({"sql": answer, "used": ["../../data/answers.json:1"], "usage": usage[request["id"]]}))',
)


def _usage(prompt: int, completion: int, cost: float) -> dict:
    return {
        "model": "m",
        "llm_calls": 1,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_usd": cost,
    }


CHEAP = {
    "count": _usage(400, 20, 0.0021),
    "names": _usage(500, 30, 0.0026),
    "cities": _usage(450, 25, 0.0024),
    **{f"count{i}": _usage(420 + i, 22, 0.0022) for i in range(5)},
}
DOUBLED = {
    k: {**v, "prompt_tokens": 2 * v["prompt_tokens"], "completion_tokens": 2 * v["completion_tokens"]}
    | {"cost_usd": 2 * v["cost_usd"], "llm_calls": 2}
    for k, v in CHEAP.items()
}
GATE = "gate:\n  max_cost_increase: 20%\n  max_tokens_increase: 20%\n  max_latency_increase: 20%\n"


MORE = {
    f"count{i}": f"SELECT count(*) + {i} FROM customers" for i in range(5)
}  # 8 cases: room for an interval


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    src = make_tiny_repo(tmp_path / "src", answers={**GOOD, **MORE})
    with (src / "evals/suite/cases/all.yml").open("a") as cases:
        for case_id, sql in MORE.items():
            cases.write(
                f"- id: {case_id}\n  question: How many customers, plus a number?\n  gold_sql: {sql}\n"
            )
    (src / "evals/agent/agent.py").write_text(METERED)
    (src / "data/usage.json").write_text(json.dumps(CHEAP))
    (src / CONFIG).write_text(config() + GATE)
    git(src, "add", "-A")
    git(src, "commit", "-qm", "an agent that reports its usage, and a gate on it")
    git(src, "checkout", "-q", "-b", "feature")
    monkeypatch.chdir(src)
    return src


def check(pg_dsn: str, out: Path) -> tuple[int, Comparison]:
    rc = main(
        ["check", "evals/suite", "--config", CONFIG, "--base", "main", "--dsn", pg_dsn, "--out", str(out)]
    )
    return rc, Comparison.model_validate_json((out / "comparison.json").read_text())


def test_a_head_that_doubles_the_cost_of_every_answer_fails_the_cost_gate(repo, pg_dsn, tmp_path, capsys):
    (repo / "data/usage.json").write_text(json.dumps(DOUBLED))
    git(repo, "commit", "-qam", "the same answers at twice the tokens")
    rc, cmp = check(pg_dsn, tmp_path / "out")
    assert rc == 1 and cmp.verdict == "regressions" and not cmp.judged_as("regressed")  # every verdict kept
    cost = next(d for d in cmp.metrics if d.metric == "cost")
    assert cost.pairs == 8 and cost.base_median == pytest.approx(0.0022) and cost.change == pytest.approx(1.0)
    assert cost.increased and cost.ci_low == pytest.approx(0.0021)  # the smallest rise: every case rose
    [reason] = [r for r in cmp.reasons if "cost per case" in r]
    assert (
        "rose 100%" in reason and "gate.max_cost_increase" in reason and "names ($0.0026 → $0.0052)" in reason
    )
    assert any("median tokens per case rose 100%" in r for r in cmp.reasons)
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "cost/case $0.0022 → $0.0044 (+100%, 95% CI +$0.0021 to +$0.0026)" in comment
    assert "tokens/case" in comment
    # Latency within the timer's noise is left off the first screen (a re-run then leaves the comment alone);
    # the HTML report shows it with its note.
    assert "latency p50" not in comment and "latency p50" in (tmp_path / "out" / "report.html").read_text()


def test_an_unchanged_head_passes_and_latency_noise_never_fails(repo, pg_dsn, tmp_path):
    (repo / "NOTES.md").write_text("the same agent, asked again\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "nothing the agent reads")
    rc, cmp = check(pg_dsn, tmp_path / "out")
    assert rc == 0 and cmp.verdict == "pass", cmp.reasons
    by = {d.metric: d for d in cmp.metrics}
    assert by["cost"].change == 0 and by["tokens"].change == 0
    assert by["latency"].pairs == 8  # both sides asked their agent in this check: it is measured
    assert not any("latency" in r for r in cmp.reasons)
