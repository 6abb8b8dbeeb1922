"""The repair pull request's body: golden files for an LLM repair and a partial revert, the 65,536-character
limit met by cutting whole lines and rows (the marker and the data block survive), hostile text inert, and
the data block's numbers equal to the outcome's.

Rewrite the golden files after a deliberate change with
`SQLCANARY_UPDATE_GOLDEN=1 pytest tests/unit/test_report_repair_pr.py` and review the diff."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from bot.attribution.hunks import Change
from bot.attribution.revert import CaseOutcome, RevertCandidate
from bot.github.repair_change import RepairTarget
from bot.repair.outcome import AttemptRecord, CaseRepair, CritiqueRecord, LLMStats, RepairOutcome
from bot.report.repair_pr import (
    BODY_LIMIT,
    MAX_DATA_IDS,
    data_block,
    parse_repair_data,
    render_repair_pr,
    repair_marker,
)
from bot.report.repair_view import Rates, RepairPRView, build_repair_pr_view
from tests.unit.test_report import assert_golden, assert_inert

DAU_DIFF = (
    "--- a/kb/metrics/dau.yaml\n+++ b/kb/metrics/dau.yaml\n@@ -5,3 +5,3 @@\n table: daily_platform_activity\n"
    "-aggregation: sum\n+aggregation: avg\n filters:\n"
)
CPC_DIFF = (
    "--- a/kb/metrics/cpc.yaml\n+++ b/kb/metrics/cpc.yaml\n@@ -4,1 +4,1 @@\n-denominator: impressions\n"
    "+denominator: clicks\n"
)
HOSTILE = "@octocat <script>x</script> `code` #12 **bold** | pipe"


def _plan(reasoning: str, improvements: list[str]) -> dict:
    return {"status": "fixed", "reasoning": reasoning, "improvements_made": improvements, "actions": []}


def llm_outcome(*, hostile: bool = False, diff: str = DAU_DIFF) -> RepairOutcome:
    rationale = (
        f"DAU is an average over days {HOSTILE}" if hostile else "DAU is an average over days, not a sum"
    )
    bad_id = "case`</details>@octocat<b>" if hostile else "shop-ads-cpc-by-region-q4"
    dau = CaseRepair(
        id="shop-traffic-dau-th-q3",
        before="failed",
        after="passed",
        repaired=True,
        attempts=(
            AttemptRecord(n=1, outcome="refused", reason="search text not found"),
            AttemptRecord(
                n=2,
                outcome="accepted",
                plan=_plan(rationale, ["dau aggregates with avg"]),
                diff=diff,
            ),
        ),
    )
    earlier = CaseRepair(
        id="shop-traffic-dau-id-nov",
        before="failed",
        after="passed",
        repaired=True,
        note="fixed by an earlier edit",
    )
    cpc = CaseRepair(
        id=bad_id,
        before="failed",
        after="failed",
        attempts=(
            AttemptRecord(
                n=1, outcome="still_failing", reason=f"after your edit the case is still failed: {HOSTILE}"
            ),
        ),
    )
    return RepairOutcome(
        suite="shop",
        cases=(dau, earlier, cpc),
        skipped=("shop-traffic-lowest-dau-sea-q4",),
        critique=(CritiqueRecord(n=1, status="perfect", outcome="no_change"),),
        files_changed=("kb/metrics/dau.yaml",),
        kb_diff=diff,
        issues_found=(
            f"dau.yaml sums DAU over days {HOSTILE}" if hostile else "dau.yaml sums DAU over days",
        ),
        improvements_made=("dau.yaml averages DAU over days",),
        base_pass_rate=0.96,
        head_pass_rate=0.8,
        repaired_pass_rate=0.92,
        llm=LLMStats(calls=4, cached_calls=1, prompt_tokens=5200, completion_tokens=640, cost_usd=0.0123),
        final_statuses={
            "shop-traffic-dau-th-q3": "passed",
            "shop-traffic-dau-id-nov": "passed",
            bad_id: "failed",
            "shop-traffic-lowest-dau-sea-q4": "failed",
            "shop-x-invalid": "invalid",
            "shop-x-ok": "passed",
        },
    )


def revert_candidate() -> RevertCandidate:
    broke = Change(
        id=1,
        file="kb/metrics/cpc.yaml",
        old_start=4,
        old_lines=("denominator: clicks\n",),
        new_start=4,
        new_lines=("denominator: impressions\n",),
    )
    kept = Change(
        id=0,
        file="kb/metrics/cpc.yaml",
        old_start=2,
        old_lines=("description: old\n",),
        new_start=2,
        new_lines=("description: new\n",),
    )
    return RevertCandidate(
        holds=True,
        reverted=(broke,),
        kept=(kept,),
        files={"kb/metrics/cpc.yaml": "..."},
        diff=CPC_DIFF,
        cases=(
            CaseOutcome(id="shop-ads-cpc-by-region-q4", head="failed", reverted="passed", verdict="restored"),
            CaseOutcome(id="shop-ads-ctr", head="passed", reverted="passed", verdict="kept"),
            CaseOutcome(
                id="shop-hard-one",
                head="failed",
                reverted="failed",
                verdict="still_failing",
                reason="wrong rows",
            ),
        ),
        base_pass_rate=1.0,
        head_pass_rate=1 / 3,
        reverted_pass_rate=2 / 3,
        agent_calls=3,
    )


def llm_view(**kw: object) -> RepairPRView:
    outcome = kw.pop("outcome", None) or llm_outcome()
    assert isinstance(outcome, RepairOutcome)
    return build_repair_pr_view(
        pr_number=12,
        rates=Rates(outcome.base_pass_rate, outcome.head_pass_rate, outcome.repaired_pass_rate),
        token="github_token",
        outcome=outcome,
        revert=revert_candidate(),
        source_url="https://github.example/acme/shop/pull/12",
        workflow="sqlcanary",
        **kw,  # type: ignore[arg-type]
    )


def test_llm_repair_golden() -> None:
    assert_golden("repair_pr_llm.md", render_repair_pr(llm_view()))


def test_revert_golden() -> None:
    candidate = revert_candidate()
    view = build_repair_pr_view(
        pr_number=7,
        rates=Rates(candidate.base_pass_rate, candidate.head_pass_rate, candidate.reverted_pass_rate),
        token="repair_token",
        revert=candidate,
        note="No LLM is configured: the verified partial revert is the repair.",
    )
    assert_golden("repair_pr_revert.md", render_repair_pr(view))


def test_the_body_holds_every_part_in_order() -> None:
    body = render_repair_pr(llm_view())
    assert body.startswith(repair_marker(12) + "\n")
    assert repair_marker(12) == RepairTarget("acme/shop", 12, "feature", "a" * 40).marker  # the adapter's
    parts = [
        "**Fixes 2 failing cases of #12",
        "### Issues found",
        "### Improvements made",
        "### KB changes",
        "#### 1. LLM edit",
        "```diff",
        "| 96.0% | 80.0% | **92.0%** |",
        "### Still failing (2)",
        "### Cost",
        "### How to re-run",
        "CI will not start on its own here",
        "Follow-up to #12",
        "<!-- sqlcanary:repair-data",
    ]
    at = [body.index(p) for p in parts]
    assert at == sorted(at), parts
    assert "96.0% → 80.0% → 92.0%" in body  # base → head → repaired, in that order
    assert "LLM: 4 calls (1 cached) · 5840 tokens" in body and "$0.0123" in body
    assert "workflow_dispatch" in body and "close and reopen" in body
    assert "Partial revert" not in body  # an LLM edit holds: the revert is not offered
    assert body.rstrip().endswith("-->")
    assert_inert(body.replace("#12", "#\u200b12"))


def test_a_repair_token_needs_no_ci_note() -> None:
    body = render_repair_pr(dataclasses.replace(llm_view(), token="repair_token"))
    assert "CI will not start" not in body and "workflow_dispatch" not in body


def test_data_block_holds_the_outcomes_numbers() -> None:
    outcome = llm_outcome()
    data = parse_repair_data(render_repair_pr(llm_view(outcome=outcome)))
    assert data is not None
    assert data["pass_rates"] == {
        "base": outcome.base_pass_rate,
        "head": outcome.head_pass_rate,
        "repaired": outcome.repaired_pass_rate,
    }
    assert data["fixed_by"] == "llm_edit" and data["pr"] == 12 and data["token"] == "github_token"
    assert data["cases"]["fixed"] == ["shop-traffic-dau-th-q3", "shop-traffic-dau-id-nov"]
    assert data["cases"]["still_failing"] == ["shop-ads-cpc-by-region-q4", "shop-traffic-lowest-dau-sea-q4"]
    assert data["files"] == ["kb/metrics/dau.yaml"]
    assert data["llm"]["calls"] == 4 and data["llm"]["cost_usd"] == 0.0123


def test_revert_is_labelled_and_offered_when_no_llm_edit_holds() -> None:
    outcome = llm_outcome().model_copy(update={"files_changed": (), "kb_diff": ""})
    body = render_repair_pr(llm_view(outcome=outcome))
    assert "#### 1. Partial revert of #12's changes" in body
    assert "Reverted: `kb/metrics/cpc.yaml line 4` · kept: `kb/metrics/cpc.yaml line 2`" in body
    assert "+denominator: clicks" in body
    data = parse_repair_data(body)
    assert data is not None and data["fixed_by"] == "revert"
    assert data["cases"] == {
        "fixed": ["shop-ads-cpc-by-region-q4"],
        "fixed_count": 1,
        "still_failing": ["shop-hard-one"],
        "still_failing_count": 1,
    }


def test_nothing_holds() -> None:
    outcome = llm_outcome().model_copy(update={"files_changed": (), "kb_diff": ""})
    view = build_repair_pr_view(
        pr_number=3, rates=Rates(1.0, 0.5, 0.5), token="github_token", outcome=outcome
    )
    body = render_repair_pr(view)
    assert "**No verified repair for #3" in body and "No KB change holds." in body
    assert parse_repair_data(body)["fixed_by"] == "none"  # type: ignore[index]


def test_hostile_text_is_inert() -> None:
    body = render_repair_pr(llm_view(outcome=llm_outcome(hostile=True)))
    assert_inert(body.replace("#12", "#\u200b12"))
    assert "@\u200boctocat" in body and "&lt;script&gt;" in body
    assert "<script>" not in body
    assert "| ``case`</details>@octocat<b>`` |" in body  # the id as an inert code span
    data = parse_repair_data(body)
    assert data is not None and "case`</details>@octocat<b>" in data["cases"]["still_failing"]


@pytest.mark.parametrize("evil", ["a-->b", "x--!>y", "<!--", "--", "--->"])
def test_ids_cannot_end_the_data_block(evil: str) -> None:
    block = data_block({"cases": {"fixed": [evil]}})
    inner = block.removeprefix("<!--").removesuffix("-->")
    assert "--" not in inner and ">" not in inner and "<" not in inner
    assert parse_repair_data(block) == {"cases": {"fixed": [evil]}}


def _huge_diff(lines: int) -> str:
    body = "".join(f"+line {i}: {'x' * 60} ```` </details>\n" for i in range(lines))
    return f"--- a/kb/big.yaml\n+++ b/kb/big.yaml\n@@ -1,0 +1,{lines} @@\n{body}"


@pytest.mark.parametrize("limit", [BODY_LIMIT, 20_000, 5_000])
def test_a_huge_diff_is_cut_cleanly_under_the_limit(limit: int) -> None:
    outcome = llm_outcome(diff=_huge_diff(5_000))
    many = tuple(f"shop-case-{i:04d}" for i in range(300))
    outcome = outcome.model_copy(
        update={"final_statuses": {**outcome.final_statuses, **dict.fromkeys(many, "failed")}}
    )
    full = render_repair_pr(llm_view(outcome=outcome), limit=10**8)
    assert len(full) > BODY_LIMIT
    body = render_repair_pr(llm_view(outcome=outcome), limit=limit)
    assert len(body) <= limit
    assert body.startswith(repair_marker(12) + "\n")
    assert_inert(body.replace("#12", "#\u200b12"))  # every fence closed, no </details> let loose
    assert re.search(r"more diff lines: see the Files changed tab", body)
    data = parse_repair_data(body)
    assert data == parse_repair_data(full)  # the numbers survive whole
    assert data is not None and data["cases"]["still_failing_count"] == 302
    assert len(data["cases"]["still_failing"]) == MAX_DATA_IDS
    if limit == BODY_LIMIT:
        assert "+line 0:" in body  # the diff's first lines are kept, whole
        assert "### How to re-run" in body and "Follow-up to #12" in body


def test_a_tiny_limit_still_gives_a_marked_body() -> None:
    body = render_repair_pr(llm_view(outcome=llm_outcome(diff=_huge_diff(500))), limit=300)
    assert len(body) <= 300 and body.startswith(repair_marker(12))


def test_secrets_are_masked() -> None:
    secret = "sk-live-abcdefghijklmnop1234"
    outcome = llm_outcome()
    outcome = outcome.model_copy(update={"issues_found": (f"the key {secret} leaked",)})
    body = render_repair_pr(llm_view(outcome=outcome), secrets=[secret])
    assert secret not in body and "the key" in body


def test_marker_refuses_what_is_not_a_pr_number() -> None:
    for bad in (0, -1, True):
        with pytest.raises(ValueError):
            repair_marker(bad)  # type: ignore[arg-type]


def test_data_block_is_json_on_one_line() -> None:
    block = data_block({"a": 1})
    assert block.splitlines()[1] == json.dumps({"a": 1})
