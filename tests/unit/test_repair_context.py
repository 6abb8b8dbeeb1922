"""An agent that returns no `used` still gets a useful repair prompt: the KB files whose names, metric names or
tables the gold SQL, the agent's SQL and the question mention (bot.repair.mentions), on the shop example."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.base.results import CaseResult, Prediction
from bot.cases.loader import load_suite
from bot.cases.model import Case, Suite
from bot.config.model import load_config
from bot.kb.files import KBFiles
from bot.repair.context import failure_context
from bot.repair.mentions import MAX_MENTIONED, WHOLE_LINES, find_mentions, mention
from bot.repair.prompts import case_messages

SHOP = Path(__file__).resolve().parents[2] / "benchmarks" / "shop"
REGRESSIONS = sorted((SHOP / "regressions").glob("*.yml"))


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(SHOP)


@pytest.fixture(scope="module")
def kb() -> KBFiles:
    return KBFiles.from_config(load_config(SHOP / "sqlcanary.yml"))


def _case(suite: Suite, case_id: str) -> Case:
    return next(c for c in suite.cases if c.id == case_id)


def _failed(case: Case, sql: str, used: tuple[str, ...] = ()) -> CaseResult:
    return CaseResult(
        id=case.id,
        status="failed",
        category=case.category,
        question=case.question,
        prediction=Prediction(sql=sql, used=used),
        reason="wrong rows",
    )


@pytest.mark.parametrize("regression", REGRESSIONS, ids=lambda p: p.stem)
def test_every_planted_regressions_file_is_shown_for_every_case_it_breaks(
    regression: Path, suite: Suite, kb: KBFiles
) -> None:
    """From the gold SQL and the question (with its instructions) alone: the file the regression edits is among
    those shown."""
    planted = yaml.safe_load(regression.read_text(encoding="utf-8"))
    edited = {e["file"] for e in planted["edits"]}
    files = kb.files()
    for case_id in planted["breaks"]:
        case = _case(suite, case_id)
        asked = " ".join(filter(None, (case.question, case.instructions)))  # as failure_context asks
        shown = [m.file for m in find_mentions(files, case.gold_sql, question=asked)]
        assert edited & set(shown), (case_id, shown)
        assert len(shown) <= MAX_MENTIONED


def test_a_prompt_without_used_shows_the_kb_files_the_sql_names(suite: Suite, kb: KBFiles) -> None:
    case = _case(suite, "shop-traffic-dau-th-q3")
    wrong = "SELECT sum(dau) FROM daily_platform_activity WHERE region_code = 'TH' AND tz_type = 'local'"
    ctx = failure_context(_failed(case, wrong), case, kb)
    assert ctx.excerpts_from == "mentions"
    by_file = {e.file: e for e in ctx.excerpts}
    assert "kb/metrics/dau.yaml" in by_file and "kb/tables.yaml" in by_file
    dau = by_file["kb/metrics/dau.yaml"]
    assert "aggregation: avg" in dau.text  # a small metric file is shown whole, the broken line with it
    assert "> " in dau.text and "name: dau" in dau.text
    tables = by_file["kb/tables.yaml"].text
    assert "daily_platform_activity:" in tables and "order_items:" not in tables  # only that table's block
    assert ctx.example is not None and ctx.example[0] in by_file  # the reply's example is a real line
    prompt = case_messages(ctx, globs=kb.globs, files=sorted(kb.files()), feedback=[])[1]["content"]
    assert "## KB files this case is about" in prompt and "did not say which KB lines" in prompt
    assert "`kb/metrics/dau.yaml`:" in prompt and "aggregation: avg" in prompt
    assert "(the agent cited no KB lines)" not in prompt


def test_a_snippet_a_metric_is_built_from_is_shown(suite: Suite, kb: KBFiles) -> None:
    case = _case(suite, "shop-items-sold-th-nov")
    ctx = failure_context(_failed(case, "SELECT 1"), case, kb)
    files = [e.file for e in ctx.excerpts]
    assert "kb/metrics/items_sold.yaml" in files and "kb/snippets/completed_order_items.sql" in files


def test_cited_lines_still_win(suite: Suite, kb: KBFiles) -> None:
    case = _case(suite, "shop-traffic-dau-th-q3")
    ctx = failure_context(_failed(case, "SELECT 1", used=("kb/metrics/cpc.yaml:1-2",)), case, kb)
    assert ctx.excerpts_from == "used" and [e.file for e in ctx.excerpts] == ["kb/metrics/cpc.yaml"]
    prompt = case_messages(ctx, globs=kb.globs, files=[], feedback=[])[1]["content"]
    assert "## KB lines the agent used for this answer" in prompt


def test_unreadable_refs_fall_back_to_mentions(suite: Suite, kb: KBFiles) -> None:
    case = _case(suite, "shop-ads-cpc-by-region-q4")
    ctx = failure_context(_failed(case, "SELECT 1", used=("kb/gone.yaml:1",)), case, kb)
    assert ctx.excerpts_from == "mentions" and ctx.unused_refs == ("kb/gone.yaml",)
    assert "kb/metrics/cpc.yaml" in [e.file for e in ctx.excerpts]  # by its synonym "cost per click"


def test_nothing_named_shows_nothing() -> None:
    assert find_mentions({"kb/a.yaml": "name: gmv\ntable: orders\n"}, ["SELECT 1"], question="hello") == []


def test_large_files_show_the_named_blocks_only() -> None:
    body = "".join(f"  - name: metric_{i}\n    expression: x{i}\n" for i in range(WHOLE_LINES))
    found = mention("kb/all.yaml", f"metrics:\n{body}", {"metric_7"}, set())
    assert found is not None and not found.whole
    assert found.marked == ((16, 17),)  # `- name: metric_7` and the line indented below it


def test_used_free_text_is_matched_as_identifiers_not_substrings() -> None:
    files = {"kb/metrics/orders.yaml": "name: orders\ntable: orders\n"}
    assert find_mentions(files, ["SELECT * FROM orders_archive"]) == []
    assert [m.file for m in find_mentions(files, ["SELECT * FROM s.orders"])] == ["kb/metrics/orders.yaml"]
