"""`repair --dry-run` on the terminal: each plan and its diff (bot.repair.dryrun), and the console summary no
longer says "no attempt" for a case whose plan was shown."""

from __future__ import annotations

from bot.repair.dryrun import DRY_RUN_REASON, MAX_DIFF_LINES, dry_run_text, format_plan
from bot.repair.outcome import AttemptRecord, CaseRepair, RepairOutcome
from bot.repair.report import console_summary

DIFF = (
    "--- a/kb/metrics/cpc.yaml\n+++ b/kb/metrics/cpc.yaml\n@@ -4 +4 @@\n-denominator: impressions\n"
    "+denominator: clicks\n"
)
PLAN = {
    "status": "updated",
    "reasoning": "cost per click is spend over clicks",
    "issues_found": ["cpc divides by impressions"],
    "improvements_made": ["cpc divides by clicks"],
    "actions": [{"type": "edit_metric", "file": "kb/metrics/cpc.yaml", "edits": []}],
}


def dry_outcome(diff: str = DIFF, plan: dict = PLAN) -> RepairOutcome:
    shown = CaseRepair(
        id="shop-ads-cpc-by-region-q4",
        before="failed",
        after="failed",
        attempts=(
            AttemptRecord(n=1, outcome="refused", reason="search text not found in kb/metrics/cpc.yaml"),
            AttemptRecord(n=2, outcome="dry_run", reason=DRY_RUN_REASON, plan=plan, diff=diff),
        ),
    )
    nothing = CaseRepair(
        id="shop-other",
        before="failed",
        after="failed",
        attempts=(AttemptRecord(n=1, outcome="bad_reply", reason="your reply was not usable JSON"),),
    )
    return RepairOutcome(suite="shop", dry_run=True, cases=(shown, nothing))


def test_each_plan_is_shown_with_its_diff() -> None:
    text = dry_run_text(dry_outcome())
    assert text.startswith("dry run: 1 plan(s) checked and shown below; nothing was applied")
    assert "== shop-ads-cpc-by-region-q4: plan of attempt 2 ==" in text
    assert "reasoning: cost per click is spend over clicks" in text
    assert "issue: cpc divides by impressions" in text and "improvement: cpc divides by clicks" in text
    assert "actions: edit kb/metrics/cpc.yaml" in text
    assert "-denominator: impressions\n+denominator: clicks" in text
    assert "== shop-other: no valid plan ==\nyour reply was not usable JSON" in text
    assert "search text not found" not in text  # refused attempts stay in the summary and the report


def test_the_summary_names_the_shown_plan_not_no_attempt() -> None:
    summary = console_summary(dry_outcome())
    assert "shop-ads-cpc-by-region-q4: " + DRY_RUN_REASON in summary
    assert "no attempt" not in summary


def test_a_real_run_shows_nothing() -> None:
    assert dry_run_text(dry_outcome().model_copy(update={"dry_run": False})) == ""


def test_terminal_escapes_from_the_llm_are_shown_not_sent() -> None:
    evil = {**PLAN, "reasoning": "fine\x1b]0;pwned\x07\x1b[2J", "actions": [{"file": "a\x1b[31m.yaml"}]}
    text = dry_run_text(dry_outcome(diff=DIFF + "+x\x1b[2Jy\r\n", plan=evil))
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b]0;pwned\\x07" in text and "+x\\x1b[2Jy" in text


def test_a_long_diff_is_cut_by_lines() -> None:
    diff = DIFF + "".join(f"+line {i}\n" for i in range(MAX_DIFF_LINES * 2))
    record = AttemptRecord(n=1, outcome="dry_run", plan=PLAN, diff=diff)
    text = format_plan("case", record)
    assert "+line 0" in text and f"+line {MAX_DIFF_LINES * 2 - 1}" not in text
    assert text.endswith("more diff lines (outcome.json and repair_report.md hold them all)")
