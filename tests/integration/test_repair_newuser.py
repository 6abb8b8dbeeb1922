"""Repair as a new user tries it, end to end on the shop with `cpc_wrong_denominator` planted, a real
PostgreSQL and the scripted OpenAI-compatible server: `--dry-run` shows the plan and its diff, and an agent
whose answers carry no `used` still gets the KB file that broke in its prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.results import RunResult
from bot.repair.dryrun import DRY_RUN_REASON, dry_run_text
from bot.repair.report import console_summary
from tests.integration.test_repair import CPC, CPC_CASE, FIX, broken_shop, client, do_repair, shop, snapshot  # noqa: F401  (fixtures, through `planted`)
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.integration


@pytest.fixture
def planted(request: pytest.FixtureRequest) -> tuple[Path, RunResult]:
    """test_repair's `shop`: a fresh copy of the broken shop and its run."""
    return request.getfixturevalue("shop")


def test_dry_run_prints_the_plan_and_its_diff(planted, pg_server, tmp_path):
    root, run = planted
    before = snapshot(root)
    with FakeOpenAI([FIX]) as srv:
        outcome = do_repair(root, run, pg_server, client(srv, tmp_path), dry_run=True)
    assert snapshot(root) == before
    summary, plans = console_summary(outcome), dry_run_text(outcome)
    assert "no attempt" not in summary and DRY_RUN_REASON in summary
    assert f"== {CPC_CASE}: plan of attempt 1 ==" in plans
    assert "-denominator: impressions\n+denominator: clicks" in plans and f"edit {CPC}" in plans


def test_answers_without_used_still_show_the_broken_file(planted, pg_server, tmp_path):
    root, run = planted
    bare = run.model_copy(
        update={
            "cases": tuple(
                c.model_copy(update={"prediction": c.prediction.model_copy(update={"used": ()})})
                for c in run.cases
            )
        }
    )
    with FakeOpenAI([FIX]) as srv:
        outcome = do_repair(root, bare, pg_server, client(srv, tmp_path), max_critique=0)
        prompt = srv.completions[0].prompt_text
    assert "## KB files this case is about" in prompt
    assert f"`{CPC}`:" in prompt and "denominator: impressions" in prompt
    assert [c.id for c in outcome.repaired] == [CPC_CASE] and outcome.files_changed == (CPC,)
