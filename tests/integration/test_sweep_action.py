"""A sweep through the Action, in process, on real PostgreSQL: `mode: sweep-plan` turns a grid into the matrix
output, each matrix entry runs as `mode: sweep` (input `setting` = the entry's JSON, `shard`) and writes its
RunResult under sqlcanary-results/sweep/<setting>/ with the setting recorded; the shards merged per setting equal
the unsharded runs case for case; `mode: sweep-report` reads the uploads from an artifact folder and writes one
table with both settings (job summary, sweep-report.md/html/json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.base.results import CaseResult, read_run
from bot.base.settings import Settings
from bot.commands.action import action
from bot.github.context import ActionContext
from bot.github.event import load_event
from bot.github.inputs import RunnerContext, read_inputs
from bot.sweep.collect import by_setting
from tests.support.github_fixtures import REPO
from tests.support.github_runner_files import parse_outputs
from tests.support.tinyrepo import CONFIG, GOOD, git, make_tiny_repo, write

pytestmark = pytest.mark.integration

MORE_CASES = """\
- id: ids
  question: Customer ids?
  gold_sql: SELECT id FROM customers
- id: rome
  question: Who lives in Rome?
  gold_sql: SELECT name FROM customers WHERE city = 'Rome'
- id: paris
  question: How many in Paris?
  gold_sql: SELECT count(*) FROM customers WHERE city = 'Paris'
- id: max-id
  question: The largest id?
  gold_sql: SELECT max(id) FROM customers
"""
ANSWERS = GOOD | {
    "names": "SELECT city FROM customers",  # wrong: the command agent fails it, the gold agent does not
    "ids": "SELECT id FROM customers",
    "rome": "SELECT name FROM customers WHERE city = 'Paris'",  # wrong
    "paris": "SELECT count(*) FROM customers WHERE city = 'Paris'",
    "max-id": "SELECT max(id) FROM customers",
}
GRID = """\
settings:
  - {name: command}
  - {name: reference, agent: gold, preset: sqlcanary}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    make_tiny_repo(root, ANSWERS)
    cases = root / "evals/suite/cases/all.yml"
    write(root, {"evals/suite/cases/all.yml": cases.read_text() + MORE_CASES, "sweep.yml": GRID})
    git(root, "add", "-A")
    git(root, "commit", "-qm", "more cases, a grid")
    return root


def dispatch(tmp_path: Path, workspace: Path, pg_dsn: str, name: str, **inputs: str) -> tuple[int, Path]:
    """One workflow_dispatch job of the action; (exit code, its folder with output.txt and summary.md)."""
    job = tmp_path / "jobs" / name
    job.mkdir(parents=True)
    event = job / "event.json"
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    event.write_text(
        json.dumps({"ref": "refs/heads/main", "inputs": {}, "repository": repo, "sender": {"login": "alice"}})
    )
    env = {
        "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(job / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(job / "summary.md"),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SHA": git(workspace, "rev-parse", "HEAD"),
        "GITHUB_RUN_ID": "7",
        "CI": "true",
        "PATH": __import__("os").environ["PATH"],
        "INPUT_CONFIG": CONFIG,
        "INPUT_DATABASE-URL": pg_dsn,
        "INPUT_CACHE-DIR": str(tmp_path / "cache"),
    }
    env.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    settings = Settings.from_environ(env)
    read = read_inputs(env)
    runner = RunnerContext.from_environ(env)
    ctx = ActionContext(
        inputs=read,
        runner=runner,
        event=load_event(runner.event_name, runner.event_path, sha=runner.sha),
        mode=read.mode or "sweep",
    )
    return action(ctx, settings, make_github=lambda token: None), job


def same_cases(a: tuple[CaseResult, ...], b: tuple[CaseResult, ...]) -> None:
    """Case for case, timings and where each answer came from (the agent or the answer cache) aside."""

    def strip(c: CaseResult) -> dict:
        data = c.model_dump()
        data.pop("timings")
        data["prediction"].pop("duration_s")
        data["prediction"].pop("cached", None)
        return data

    assert [c.id for c in a] == [c.id for c in b]
    assert [strip(c) for c in a] == [strip(c) for c in b]


def test_plan_legs_and_report_and_the_merged_settings_equal_unsharded_runs(
    tmp_path, workspace, pg_dsn, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    code, job = dispatch(tmp_path, workspace, pg_dsn, "plan", mode="sweep-plan", grid="sweep.yml", shards="2")
    assert code == 0
    matrix = json.loads(parse_outputs(job / "output.txt")["matrix"])
    assert [(e["setting"], e["shard"]) for e in matrix["include"]] == [
        ("command", "1/2"),
        ("command", "2/2"),
        ("reference", "1/2"),
        ("reference", "2/2"),
    ]
    assert "`reference`" in (job / "summary.md").read_text()

    # the four matrix jobs, each in its own checkout, as GitHub runs them; each uploads sqlcanary-results/
    artifacts = tmp_path / "artifacts"
    for n, entry in enumerate(matrix["include"]):
        leg_ws = tmp_path / f"leg{n}"
        shutil.copytree(workspace, leg_ws)
        code, _ = dispatch(
            tmp_path, leg_ws, pg_dsn, f"leg{n}", setting=json.dumps(entry), shard=entry["shard"]
        )
        assert code == 0
        i, total = entry["shard"].split("/")
        out = leg_ws / "sqlcanary-results" / "sweep" / entry["setting"] / f"shard-{i}-of-{total}.json"
        leg = read_run(out)
        assert leg.meta.setting is not None and leg.meta.setting.name == entry["setting"]
        assert leg.meta.shard == entry["shard"] and leg.meta.setting.index == entry["index"]
        shutil.copytree(leg_ws / "sqlcanary-results", artifacts / f"sqlcanary-sweep-{n}")
    assert {len(read_run(p).cases) for p in artifacts.glob("*/sweep/*/*.json")} >= {
        3,
        4,
    }  # both shards hold cases

    # the same settings unsharded
    unsharded = {}
    for entry in matrix["include"][::2]:
        whole = {k: v for k, v in entry.items() if k != "shard"}
        code, _ = dispatch(
            tmp_path, workspace, pg_dsn, f"whole-{entry['setting']}", setting=json.dumps(whole)
        )
        assert code == 0
        unsharded[entry["setting"]] = read_run(
            workspace / "sqlcanary-results/sweep" / entry["setting"] / "run.json"
        )
    runs = [(str(p), read_run(p)) for p in sorted(artifacts.glob("*/sweep/*/*.json"))]
    merged = {s.setting.name: s.run for s in by_setting(runs)}
    assert set(merged) == {"command", "reference"}
    for name, run in merged.items():
        same_cases(run.cases, unsharded[name].cases)
        assert run.summary == unsharded[name].summary
    assert unsharded["reference"].meta.agent == "gold" and unsharded["command"].meta.agent != "gold"

    code, job = dispatch(tmp_path, workspace, pg_dsn, "report", mode="sweep-report", artifacts=str(artifacts))
    assert code == 0
    summary = (job / "summary.md").read_text()
    assert "`command`" in summary and "`reference`" in summary and "5/7" in summary and "7/7" in summary
    report = json.loads((workspace / "sqlcanary-results/sweep-report.json").read_text())
    first, second = report["settings"]
    assert (first["name"], first["passed"], second["name"], second["passed"]) == (
        "command",
        5,
        "reference",
        7,
    )
    assert second["versus_first"]["won"] == 2 and set(second["versus_first"]["won_ids"]) == {"names", "rome"}
    assert "<svg" in (workspace / "sqlcanary-results/sweep-report.html").read_text()
    assert parse_outputs(job / "output.txt")["report-path"].endswith("sweep-report.html")


TINY_GOLD = {
    "How many customers?": "SELECT count(*) FROM customers",
    "Names of the customers?": "SELECT name FROM customers",
    "Which cities?": "SELECT DISTINCT city FROM customers",
}


def test_a_legs_model_and_temperature_reach_the_llm_agent(tmp_path, pg_dsn, monkeypatch):
    """Model and temperature travel as SQLCANARY_LLM_MODEL / SQLCANARY_LLM_TEMPERATURE in the evaluation's
    environment (LLMSettings.with_env): each request the llm agent sends carries the setting's, not the config's."""
    monkeypatch.chdir(tmp_path)
    from tests.support.fake_openai import FakeOpenAI

    def reply(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        sql = next(s for q, s in TINY_GOLD.items() if q in prompt)
        return json.dumps({"sql": sql, "clarification": None})

    with FakeOpenAI(reply) as server:
        ws = make_tiny_repo(tmp_path / "workspace")
        llm = {"base_url": server.base_url, "model": "config-model", "temperature": 0, "backoff_s": 0.001}
        write(ws, {CONFIG: f"suite: ../suite\nagent: llm\nllm: {json.dumps(llm)}\n"})
        git(ws, "commit", "-qam", "llm agent")
        entry = {"setting": "hot", "index": 2, "shard": "1/1", "model": "model-b", "temperature": 0.7}
        code, _ = dispatch(
            tmp_path, ws, pg_dsn, "leg", setting=json.dumps(entry), shard="1/1", openai_api_key="sk-test-1"
        )
        assert code == 0
        sent = [(r.json["model"], r.json["temperature"]) for r in server.completions]
    assert sent == [("model-b", 0.7)] * 3
    run = read_run(ws / "sqlcanary-results/sweep/hot/shard-1-of-1.json")
    assert run.summary.passed == 3 and run.meta.llm is not None and run.meta.llm.calls == 3
    assert run.meta.setting is not None and (run.meta.setting.model, run.meta.setting.temperature) == (
        "model-b",
        0.7,
    )
