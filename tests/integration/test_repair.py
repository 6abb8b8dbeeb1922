"""The repair loop end to end: the shop example with a planted regression, a real PostgreSQL, the real
`openai` client against a scripted local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.base.results import RunResult, read_run
from bot.cases.loader import load_suite
from bot.cli import main
from bot.config.model import load_config
from bot.kb.files import KBFiles
from bot.llm import LLMClient, LLMSettings
from bot.llm.cache import ReplyCache
from bot.repair.request import RepairRequest, repair
from bot.repair.setup import Limits
from bot.repair.transaction import JOURNAL_DIR, recover
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
CPC = "kb/metrics/cpc.yaml"
CPC_CASE = "shop-ads-cpc-by-region-q4"


def plan(
    *actions: dict, issues=("cpc divides by impressions",), improvements=("cpc divides by clicks",)
) -> str:
    return json.dumps(
        {
            "status": "updated",
            "issues_found": list(issues),
            "improvements_made": list(improvements),
            "actions": list(actions),
            "reasoning": "cost per click is spend over clicks",
        }
    )


def edit(file: str, search: str, replace: str) -> dict:
    return {"type": "edit_metric", "file": file, "edits": [{"search": search, "replace": replace}]}


FIX = plan(edit(CPC, "denominator: impressions", "denominator: clicks"))
PERFECT = json.dumps({"status": "perfect", "issues_found": [], "improvements_made": [], "actions": []})
BREAKS_DAU = plan(
    edit(CPC, "denominator: impressions", "denominator: clicks"),
    edit("kb/metrics/dau.yaml", "filters:\n  - tz_type = 'local'\n", "filters: []\n"),
)


def snapshot(root: Path) -> dict[str, bytes]:
    skip = {".sqlcanary", "__pycache__", ".git"}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and not skip & set(p.relative_to(root).parts)
    }


@pytest.fixture(scope="module")
def broken_shop(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str) -> tuple[Path, Path]:
    """A copy of the shop suite with `cpc_wrong_denominator` planted, and its run (one failing case)."""
    root = tmp_path_factory.mktemp("repair") / "shop"
    shutil.copytree(SHOP, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "cases" / "markets.yml").unlink()  # its case fails on the shipped KB (a mixed change fixes it)
    cpc = root / CPC
    cpc.write_text(cpc.read_text().replace("denominator: clicks", "denominator: impressions"))
    out = root.parent / "run.json"
    assert main(["run", str(root), "--dsn", pg_dsn, "--out", str(out), "-q", "--no-answer-cache"]) == 0
    failing = [c.id for c in read_run(out).cases if c.status != "passed"]
    assert failing == [CPC_CASE]
    return root, out


@pytest.fixture
def shop(broken_shop: tuple[Path, Path], tmp_path: Path) -> tuple[Path, RunResult]:
    """A fresh copy per test (the loop edits it)."""
    src, run_file = broken_shop
    root = tmp_path / "shop"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("__pycache__", ".sqlcanary"))
    return root, read_run(run_file)


def client(srv: FakeOpenAI, tmp_path: Path) -> LLMClient:
    settings = LLMSettings(base_url=srv.base_url, model="fake-model", max_retries=2, backoff_s=0)
    return LLMClient(settings, environ={}, cache=ReplyCache(tmp_path / "llm-cache"))


_LIMITS = ("max_failures", "max_retries", "max_llm_calls", "max_critique", "max_seconds")


def do_repair(root: Path, run: RunResult, pg_server, llm: LLMClient, **kw):
    config = load_config(root / "sqlcanary.yml")
    limits = Limits(**{k: kw.pop(k) for k in _LIMITS if k in kw})
    req = RepairRequest(run=run, config=config, suite=load_suite(root), limits=limits, **kw)
    return repair(req, server=pg_server, client=llm)


def test_cli_without_a_model_says_what_it_can_do_offline(shop, pg_dsn, tmp_path, monkeypatch, capsys):
    root, run = shop
    monkeypatch.setenv("SQLCANARY_LLM_BASE_URL", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run_file = tmp_path / "run.json"
    run_file.write_text(run.model_dump_json())
    argv = ["repair", str(run_file), "--config", str(root / "sqlcanary.yml"), "--dsn", pg_dsn, "-q"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no API key: set the environment variable OPENAI_API_KEY" in err
    assert "replay:FILE" in err and "--no-repair" in err and "check --attribute-calls N" in err
    assert main([*argv, "--out", str(tmp_path / "eval"), "--no-repair"]) == 0  # what it offers does run


def test_cli_repairs_the_case_keeps_the_suite_green_and_commits(shop, pg_dsn, tmp_path, monkeypatch):
    root, run = shop
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "base"], check=True)
    monkeypatch.setenv("SQLCANARY_LLM_BASE_URL", "")
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@example.com")
    (root / "notes.txt").write_text("unrelated work in progress\n")
    out = tmp_path / "out"
    run_file = tmp_path / "run.json"
    run_file.write_text(run.model_dump_json())
    with FakeOpenAI([FIX, PERFECT]) as srv:
        monkeypatch.setenv("SQLCANARY_LLM_BASE_URL", srv.base_url)
        rc = main(
            [
                "repair",
                str(run_file),
                "--config",
                str(root / "sqlcanary.yml"),
                "--dsn",
                pg_dsn,
                "--out",
                str(out),
                "--commit",
                "-q",
            ]
        )
        assert rc == 0
        assert len(srv.completions) == 2  # the plan, then one critique that says "perfect"
        first = srv.completions[0].prompt_text
    # the prompt holds the case and only the KB lines the agent used, not the whole KB
    assert CPC_CASE in first and "denominator: impressions" in first
    assert "kb/metrics/cpc.yaml" in first and "kb/metrics/gmv.yaml`:" not in first
    outcome = json.loads((out / "outcome.json").read_text())
    assert [c["id"] for c in outcome["cases"] if c["repaired"]] == [CPC_CASE]
    assert set(outcome["final_statuses"].values()) == {"passed"}
    assert outcome["files_changed"] == [CPC]
    diff = (out / "kb.diff").read_text()
    assert "-denominator: impressions" in diff and "+denominator: clicks" in diff
    report = (out / "repair_report.md").read_text()
    assert "cpc divides by impressions" in report and "cpc divides by clicks" in report
    assert "+denominator: clicks" in report and CPC_CASE in report
    assert "denominator: clicks" in (root / CPC).read_text()
    log = subprocess.run(
        ["git", "-C", str(root), "show", "--stat", "--format=%B", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert CPC_CASE in log and "cpc.yaml" in log and "notes.txt" not in log
    assert not any((root / JOURNAL_DIR).iterdir())


def test_a_fix_that_breaks_other_cases_is_reverted_and_the_reason_fed_back(shop, pg_server, tmp_path):
    root, run = shop
    dau = (root / "kb/metrics/dau.yaml").read_bytes()
    with FakeOpenAI([BREAKS_DAU, FIX, PERFECT]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_critique=1)
        second = srv.completions[1].prompt_text
    first, last = outcome.cases[0].attempts
    assert first.outcome == "broke_others" and "shop-traffic-dau-id-nov" in first.broke
    assert "broke cases that passed before" in second and "shop-traffic-dau-id-nov" in second
    assert last.outcome == "accepted" and outcome.cases[0].repaired
    assert (root / "kb/metrics/dau.yaml").read_bytes() == dau
    assert "dau.yaml" not in outcome.kb_diff and outcome.files_changed == (CPC,)
    assert outcome.repaired_pass_rate == 1.0


def test_hostile_plans_are_refused_and_nothing_is_written(shop, pg_server, tmp_path):
    root, run = shop
    outside = tmp_path / "outside.yaml"
    outside.write_text("name: outside\n")
    (root / "kb/metrics/evil.yaml").symlink_to(outside)
    create = {"type": "create_metric", "content": "name: x\n"}
    hostile = [
        plan({**create, "file": "../../.github/workflows/x.yml"}),
        plan({**create, "file": str(root / "kb/metrics/abs.yaml")}),
        plan(edit("kb/metrics/evil.yaml", "name: outside", "name: pwned")),
        plan({"type": "create_snippet", "file": "agent.py", "content": "import os\n"}),
        plan(edit(CPC, "denominator: impressions", "denominator: [broken")),
    ]
    before = snapshot(root)
    with FakeOpenAI(list(hostile)) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_retries=5)
        prompts = [r.prompt_text for r in srv.completions]
    attempts = outcome.cases[0].attempts
    assert [a.outcome for a in attempts] == ["refused"] * 5
    assert "`..`" in attempts[0].reason and "absolute" in attempts[1].reason
    assert "outside" in attempts[2].reason and "no code" in attempts[3].reason
    assert "YAML does not parse" in attempts[4].reason
    assert "refused" in prompts[-1] and "`..`" in prompts[-1]
    assert snapshot(root) == before and outside.read_text() == "name: outside\n"
    assert not (root.parent / ".github").exists() and not (tmp_path / ".github").exists()
    assert outcome.files_changed == () and outcome.kb_diff == ""


def test_the_call_budget_is_never_exceeded(shop, pg_server, tmp_path):
    root, run = shop
    before = snapshot(root)
    with FakeOpenAI(["I think the denominator is wrong, sorry, no JSON"]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_retries=10, max_llm_calls=3)
        sent = len(srv.completions)
    assert sent <= 3
    assert outcome.stopped and "budget" in outcome.stopped
    assert outcome.llm.parse_failed >= 1 and outcome.cases[0].attempts[0].outcome == "bad_reply"
    assert snapshot(root) == before


def test_a_spent_time_budget_stops_the_loop_before_it_asks(shop, pg_server, tmp_path):
    """`max_seconds` (the Action's `repair-max-minutes`): once spent, no request is sent, the KB is untouched."""
    root, run = shop
    before = snapshot(root)
    with FakeOpenAI([FIX]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_seconds=0)
        sent = len(srv.completions)
    assert sent == 0
    assert outcome.stopped and "time budget spent" in outcome.stopped
    assert snapshot(root) == before


def test_dry_run_shows_the_plan_and_writes_nothing(shop, pg_server, tmp_path):
    root, run = shop
    before = snapshot(root)
    with FakeOpenAI([FIX]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), dry_run=True)
    (attempt,) = outcome.cases[0].attempts
    assert attempt.outcome == "dry_run" and "+denominator: clicks" in attempt.diff
    assert snapshot(root) == before and outcome.files_changed == ()


def _repair_process(root: Path, run_file: Path, pg_dsn: str, base_url: str, tmp_path: Path):
    env = {
        **os.environ,
        "SQLCANARY_LLM_BASE_URL": base_url,
        "SQLCANARY_CACHE_DIR": str(tmp_path / "c"),
        "PYTHONPATH": str(REPO),
    }
    cmd = [
        sys.executable,
        "-m",
        "bot",
        "repair",
        str(run_file),
        "--config",
        str(root / "sqlcanary.yml"),
        "--dsn",
        pg_dsn,
        "--out",
        str(tmp_path / "out"),
        "-q",
    ]
    return subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_edit(path: Path, original: bytes, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while path.read_bytes() == original:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the repair never applied its edit"
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_an_interrupted_repair_leaves_the_kb_as_it_was(shop, pg_dsn, tmp_path, sig):
    root, run = shop
    run_file = tmp_path / "run.json"
    run_file.write_text(run.model_dump_json())
    before = snapshot(root)
    original = (root / CPC).read_bytes()
    with FakeOpenAI([FIX, PERFECT]) as srv:
        proc = _repair_process(root, run_file, pg_dsn, srv.base_url, tmp_path)
        try:
            _wait_for_edit(root / CPC, original, proc)  # applied, now proving it on the suite
            proc.send_signal(sig)
            rc = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc != 0
    if sig == signal.SIGKILL:  # no handler ran: the journal is there and the next start rolls it back
        assert (root / CPC).read_bytes() != original
        kb = KBFiles.from_config(load_config(root / "sqlcanary.yml"))
        assert recover(kb) == [CPC]
    assert snapshot(root) == before
    assert not any((root / JOURNAL_DIR).iterdir())


def test_a_plan_with_the_wrong_kind_for_the_file_is_applied_as_the_files_kind(shop, pg_server, tmp_path):
    """The trial's 1.5B model sent `edit_snippet` for a .yaml file and repeated it after the refusal: the kind
    follows from the file now, so the same plan repairs the case. The prompt lists the meaning-changing
    differences one by one, and the schema sent allows only {file, edits} or {file, content}."""
    root, run = shop
    as_snippet = plan(
        {**edit(CPC, "denominator: impressions", "denominator: clicks"), "type": "edit_snippet"}
    )
    with FakeOpenAI([as_snippet, PERFECT]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_critique=1)
        first = srv.completions[0]
    (attempt,) = outcome.cases[0].attempts
    assert attempt.outcome == "accepted" and outcome.cases[0].repaired
    assert "denominator: clicks" in (root / CPC).read_text()
    assert "only differences that change the result" in first.prompt_text
    assert (
        "- aggregate differs: gold SUM(ads_daily_stats.clicks), prediction SUM(ads_daily_stats.impressions)"
        in first.prompt_text
    )
    schema = first.json["response_format"]["json_schema"]["schema"]
    items = schema["properties"]["actions"]["items"]["anyOf"]
    assert all("type" not in shape["properties"] for shape in items)


def test_a_refused_edit_is_answered_with_the_plan_to_send(shop, pg_server, tmp_path):
    root, run = shop
    misremembered = plan(edit(CPC, "denominator:impressions", "denominator: clicks"))  # a space missing
    fixed = plan(edit(CPC, "denominator: impressions", "denominator: clicks"))
    with FakeOpenAI([misremembered, fixed, PERFECT]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_critique=1)
        second = srv.completions[1].prompt_text
        sent = [r.json for r in srv.completions[:2]]
    first, last = outcome.cases[0].attempts
    assert first.outcome == "refused" and last.outcome == "accepted"
    assert '"search": "denominator: impressions"' in first.reason  # the exact action to send instead
    assert '"search": "denominator: impressions"' in second
    # At temperature 0 the model gave the refused plan back unchanged: a retry samples warmer. A plan's reply
    # is capped well below the client's 2,048 tokens (a looping model ran 5 minutes to that cap).
    assert [s["temperature"] for s in sent] == [0.0, 0.6]
    assert [s["max_tokens"] for s in sent] == [1024, 1024]


def test_two_plans_the_validator_refuses_alone_are_tried_together(shop, pg_server, tmp_path):
    """A small model edits one file per plan; a rule across files (the ratio `aov` reads `gmv` and `orders`
    from one source) needs both. The second half is tried with the first, held from the refused attempt."""
    root, run = shop
    before = snapshot(root)
    gmv_half = plan(edit("kb/metrics/gmv.yaml", "table: orders\n", "table: orders_archive\n"))
    orders_half = plan(edit("kb/metrics/orders.yaml", "table: orders\n", "table: orders_archive\n"))
    with FakeOpenAI([gmv_half, orders_half, FIX, PERFECT]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), max_critique=1)
    first, second, third = outcome.cases[0].attempts
    assert first.outcome == "refused" and "share a source" in first.reason
    assert (
        second.outcome == "still_failing"
        and "tried together with the earlier plan for kb/metrics/gmv.yaml" in second.reason
    )
    assert "kb/metrics/gmv.yaml" in second.diff and "kb/metrics/orders.yaml" in second.diff
    assert third.outcome == "accepted" and outcome.files_changed == (CPC,)
    after = snapshot(root)
    assert {k for k in before if before[k] != after.get(k)} == {CPC}  # the held halves were never kept


def test_a_one_case_run_is_compared_with_the_whole_suite_not_with_itself(shop, pg_server, tmp_path):
    root, run = shop
    one = run.model_copy(update={"cases": tuple(c for c in run.cases if c.id == CPC_CASE)})
    with FakeOpenAI([FIX, PERFECT]) as srv:
        outcome = do_repair(root, one, pg_server, client(srv, tmp_path), max_critique=1)
    total = len(run.cases)
    assert outcome.counts_before.total == outcome.counts_after.total == total  # like with like
    assert outcome.head_pass_rate == (total - 1) / total and outcome.repaired_pass_rate == 1.0
    assert f"held 1 of the suite's {total} case(s)" in outcome.scope
    assert outcome.cases[0].group == "kb/metrics/cpc.yaml:1-8"  # the span only the failing answer used
