"""The shop example end to end on a real PostgreSQL: the reference agent passes every case with the shipped
KB, each planted regression fails exactly the cases it documents, and every adapter gives the same verdicts."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.base.results import RunResult, read_run
from bot.cases.loader import load_suite
from bot.cli import main

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
REGRESSIONS = sorted(p.stem for p in (SHOP / "regressions").glob("*.yml"))
# Cases that fail on the shipped KB: those a planted mixed change fixes (its manifest's `fixes`).
KNOWN_FAILING = {
    i for p in (SHOP / "regressions").glob("*.yml") for i in yaml.safe_load(p.read_text()).get("fixes", [])
}


def run_suite(suite: Path, out: Path, dsn: str, *extra: str) -> RunResult:
    rc = main(["run", str(suite), "--dsn", dsn, "--out", str(out), "-q", *extra])
    assert rc == 0
    return read_run(out)


def statuses(run: RunResult) -> dict[str, str]:
    return {c.id: c.status for c in run.cases}


def load_agent(path: Path):
    spec = importlib.util.spec_from_file_location(f"shop_agent_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_suite(tmp_path: Path) -> Path:
    target = tmp_path / "shop"
    shutil.copytree(SHOP, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def agent_sql(agent, suite: Path, kb: Path) -> dict[str, str]:
    out = {}
    for case in load_suite(suite).cases:
        reply = agent.answer({**case.agent_payload(), "options": {"kb": str(kb)}})
        out[case.id] = reply.get("sql") or f"error: {reply.get('error')}"
    return out


@pytest.fixture(scope="module")
def shipped_run(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The whole suite with the shipped KB and the agent from sqlcanary.yml (the python adapter)."""
    return run_suite(SHOP, tmp_path_factory.mktemp("shop") / "run.json", pg_dsn)


def test_shipped_kb_passes_every_case(shipped_run: RunResult):
    not_passed = {c.id: f"{c.status}: {c.reason}" for c in shipped_run.cases if c.status != "passed"}
    assert set(not_passed) == KNOWN_FAILING, not_passed
    assert len(shipped_run.cases) >= 60
    assert set(shipped_run.summary.by_category) == {"query", "personalization", "management", "efficiency"}
    assert shipped_run.meta.agent.startswith("python:")


def test_every_answer_cites_existing_kb_lines(shipped_run: RunResult):
    for case in shipped_run.cases:
        assert case.prediction.used, case.id
        for ref in case.prediction.used:
            path, _, lines = ref.rpartition(":")
            first, last = (int(n) for n in lines.split("-"))
            assert path.startswith("kb/") and 1 <= first <= last, ref
            assert last <= len((SHOP / path).read_text().splitlines()), ref


@pytest.mark.parametrize("name", REGRESSIONS)
def test_regression_fails_exactly_its_documented_cases(
    name: str, shipped_run: RunResult, pg_dsn: str, tmp_path: Path
):
    suite = copy_suite(tmp_path)
    manifest = yaml.safe_load((suite / "regressions" / f"{name}.yml").read_text())
    agent = load_agent(suite / "agent.py")
    before = agent_sql(agent, suite, suite / "kb")
    done = subprocess.run(
        [sys.executable, str(suite / "regressions" / "apply.py"), name, "--kb", str(suite / "kb")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    after = agent_sql(agent, suite, suite / "kb")
    # Cases whose SQL did not change keep their (passed) verdict: only the changed ones need running.
    changed = sorted(case_id for case_id in before if before[case_id] != after[case_id])
    assert set(manifest["breaks"]) <= set(changed)
    run = run_suite(suite, tmp_path / "run.json", pg_dsn, *[arg for i in changed for arg in ("--id", i)])
    # A case that fails on the shipped KB may change its (wrong) answer and fail still: not a break.
    still = KNOWN_FAILING - set(manifest.get("fixes", []))
    failed = {c.id for c in run.cases if c.status != "passed"} - still
    assert failed == set(manifest["breaks"])
    assert {c.status for c in run.cases if c.id in failed} == {"failed"}
    assert set(manifest.get("fixes", [])) <= set(changed) - failed  # a mixed change's fix passes
    assert all(
        statuses(shipped_run)[i] == "passed" for i in before if i not in changed and i not in KNOWN_FAILING
    )


def test_command_adapter_gives_the_same_statuses(
    shipped_run: RunResult, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    suite = copy_suite(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    ids = ["shop-traffic-*", "shop-pers-*", "shop-mgmt-*", "shop-eff-*", "shop-ads-*"]
    filters = [arg for i in ids for arg in ("--id", i)]
    one_shot = run_suite(
        suite, tmp_path / "cmd.json", pg_dsn, "--agent", f"command:python {suite / 'agent.py'}", *filters
    )
    expected = {i: s for i, s in statuses(shipped_run).items() if i in statuses(one_shot)}
    assert len(one_shot.cases) >= 40
    assert statuses(one_shot) == expected
    persistent = run_suite(
        suite,
        tmp_path / "jsonl.json",
        pg_dsn,
        "--agent",
        f"command:python {suite / 'agent.py'} --jsonl",
        "--persistent",
    )
    assert statuses(persistent) == statuses(shipped_run)
    shipped_sql = {c.id: c.prediction.sql for c in shipped_run.cases}
    assert {c.id: c.prediction.sql for c in persistent.cases} == shipped_sql


def test_predictions_file_gives_the_same_statuses(shipped_run: RunResult, pg_dsn: str, tmp_path: Path):
    agent = load_agent(SHOP / "agent.py")
    lines = []
    for case in load_suite(SHOP).cases:
        lines.append(
            json.dumps({"id": case.id, "sql": agent.answer({**case.agent_payload(), "options": {}})["sql"]})
        )
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("\n".join(lines) + "\n")
    run = run_suite(SHOP, tmp_path / "pred.json", pg_dsn, "--agent", f"predictions:{predictions}")
    assert statuses(run) == statuses(shipped_run)


def test_agent_reports_an_unanswerable_question_as_an_error():
    agent = load_agent(SHOP / "agent.py")
    reply = agent.answer({"id": "x", "question": "How is the weather in Bangkok?", "options": {}})
    assert set(reply) == {"error"} and "no metric" in reply["error"]
    broken = agent.answer({"id": "x", "question": "TH GMV in 2025", "options": {"kb": str(SHOP / "missing")}})
    assert set(broken) == {"error"}
