"""The benchmark's repair pull request column (benchmarks/llm/prflow.py) without a model: the planted mixed hunk
(`vietnam_alias_renamed`: one line that fixes a case and breaks five) goes through the Action's check and repair
step against the fake GitHub and a real bare repository, with the scripted OpenAI-compatible server standing in
for the model. The edit that keeps both spellings is the repair: the broken cases pass again on the repair
branch, the pull request's own fix stays, and nothing else breaks; a whole revert would lose the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.llm.prflow import LLMEndpoint, run_flow
from benchmarks.llm.report import pr_row, pr_table
from benchmarks.llm.workspace import make_shop_repo
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.integration

KEEP_BOTH = json.dumps(
    {
        "status": "updated",
        "issues_found": ["the Vietnam alias was renamed, so questions saying Vietnam lost their market"],
        "improvements_made": ["Vietnam answers to both spellings"],
        "actions": [
            {
                "file": "kb/dimensions.yaml",
                "edits": [{"search": "aliases: [Viet Nam]", "replace": "aliases: [Vietnam, Viet Nam]"}],
            }
        ],
        "reasoning": "an alias is added, not renamed",
    }
)
PERFECT = json.dumps({"status": "perfect", "issues_found": [], "improvements_made": [], "actions": []})


def test_the_mixed_hunk_gets_a_repair_pr_that_keeps_its_fix(tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    work.chmod(0o755)
    base = make_shop_repo(work / "base")
    with FakeOpenAI([KEEP_BOTH, PERFECT]) as llm:
        flow = run_flow(
            base, "vietnam_alias_renamed", work, llm=LLMEndpoint(llm.base_url, "fake-model"), max_llm_calls=4
        )
        assert llm.completions, flow.get("log")
    row = pr_row(flow)
    assert flow["fixed_at_head"] == ["shop-market-gmv-viet-nam-dec"], flow.get("log")
    assert row["opened"] and row["fixed_by"] == "llm_edit", flow.get("log")
    assert row["files"] == ["kb/dimensions.yaml"]
    assert row["restored"] and row["kept"] and row["clean"]
    rates = row["rates"]
    assert rates["head"] < rates["base"] < rates["repaired"]  # the repair beats the base: the PR's fix stays
    assert "| `vietnam_alias_renamed` | mixed hunk | 5 | yes |" in pr_table([row])
