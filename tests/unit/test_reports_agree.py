"""Issue 17, "reports that agree": the HTML report renders our Markdown instead of showing it, breaks case paths only
at separators, has the same sections whichever way it was made (check, `report comparison.json`, `report head.json
--base base.json`), names the changed files no answer cites under "not explained", and first differences show whole
values with counts in English. Built on the two-cause fixture of a real `sqlcanary check` (tests/fixtures/causes)."""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from bot.base.results import ResultSet, Verdict, read_run, write_run
from bot.check.pipeline import write_reports
from bot.cli import main as cli
from bot.compare.causes import explain_comparison, uncited_files
from bot.compare.comparison import Comparison, compare_runs
from bot.compare.diff import added_file, parse_diff
from bot.repair.context import row_counts
from bot.repair.setup import Limits, budget_spent
from bot.report.mdhtml import breakable, md_inline_html
from bot.report.render import render_comment, render_html
from bot.scoring.tables import TableOptions, compare_tables
from tests.unit.test_report import assert_inert

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "causes"
SUITE = "benchmarks/shop"
ANSWERS = f"{SUITE}/agent/answers.json"


@pytest.fixture(scope="module")
def runs():
    return read_run(FIXTURE / "base.json"), read_run(FIXTURE / "head.json")


@pytest.fixture(scope="module")
def only_answers(runs) -> Comparison:
    """A pull request that changed only the agent's answer file: no KB line, so nothing is explained."""
    base, head = runs
    return explain_comparison(
        compare_runs(base, head), (added_file(ANSWERS, '{"q": {"sql": "SELECT 1"}}\n'),)
    )


@pytest.fixture(scope="module")
def kb_and_answers(runs) -> Comparison:
    base, head = runs
    diff = (*parse_diff((FIXTURE / "pr.diff").read_text()), added_file(ANSWERS, "{}\n"))
    return explain_comparison(compare_runs(base, head), diff)


# --- the changed files no answer cites --------------------------------------------------------------------------


def test_a_change_to_a_file_no_answer_cites_is_named(only_answers: Comparison) -> None:
    assert only_answers.unexplained and only_answers.uncited_files == (ANSWERS,)
    comment = render_comment(only_answers)
    section = comment[comment.index("### Why") :]
    assert f"The change touched only `{ANSWERS}`, which no answer cites." in section
    assert_inert(comment)
    html = render_html(only_answers)
    uncited = re.search(r'<p class="uncited">(.*?)</p>', html)
    assert uncited and f"<code>{ANSWERS}</code>" in uncited.group(1) and "`" not in uncited.group(1)


def test_cited_kb_files_are_not_listed_but_the_other_file_is(kb_and_answers: Comparison) -> None:
    assert kb_and_answers.uncited_files == (ANSWERS,)  # the two KB files the answers used are cited
    assert (
        kb_and_answers.unexplained == ()
    )  # every regression is explained: nothing to say under "not explained"
    assert "which no answer cites" not in render_comment(kb_and_answers)


def test_uncited_files_resolve_used_paths_against_the_roots() -> None:
    changed = ("s/kb/a.yaml", "s/kb/b.yaml", "agent/x.py")
    used = ["kb/a.yaml:1-4", "s/kb/b.yaml:2", "not a span"]
    assert uncited_files(changed, used, roots=("s",)) == ("agent/x.py",)


# --- the HTML report ---------------------------------------------------------------------------------------------


def test_markdown_is_rendered_escaped_first() -> None:
    html = str(
        md_inline_html("the `<b>x</b>` column and **bold** <script>alert(1)</script> [a](https://e.x)")
    )
    assert "<code>&lt;b&gt;x&lt;/b&gt;</code>" in html and "<strong>bold</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<a " not in html  # links only in our own sentences
    assert '<a href="https://e.x">a</a>' in str(md_inline_html("[a](https://e.x)", links=True))
    assert "<a " not in str(md_inline_html("[a](javascript:alert(1))", links=True))
    assert "`" not in str(md_inline_html("a `b` c"))


def test_paths_break_only_after_separators() -> None:
    assert str(breakable("shop-traffic/dau_id:12")) == "shop-<wbr>traffic/<wbr>dau_<wbr>id:<wbr>12"
    assert str(breakable("<x>-y")) == "&lt;x&gt;-<wbr>y"


def test_the_html_report_renders_markdown_and_wraps_ids_at_separators(kb_and_answers: Comparison) -> None:
    html = render_html(kb_and_answers)
    assert "overflow-wrap: anywhere" not in html and "break-all" not in html
    assert '<td class="id">shop-<wbr>traffic-<wbr>dau-<wbr>id-<wbr>nov' in html
    # the reasons quote columns in backticks: code in the HTML, never a literal backtick
    cells = re.findall(r'<td class="text">(.*?)</td>', html, re.S)
    assert cells and not any("`" in c for c in cells)
    assert "<code>?column?</code>" in html


def sections(html: str) -> list[str]:
    return re.findall(r'<(?:section|h2|figure) id="([^"]+)"', html)


def test_check_writes_report_html_with_causes_and_latency(tmp_path: Path, runs, kb_and_answers) -> None:
    base, head = runs
    write_run(tmp_path / "base.json", base)
    write_run(tmp_path / "head.json", head)
    _, files = write_reports(kb_and_answers, base, head, tmp_path, secrets=())
    assert "report.html" in files
    html = (tmp_path / "report.html").read_text()
    assert 'id="causes"' in html and "<svg" in html[html.index('id="chart-latency"') :][:2000]


def test_report_of_comparison_json_and_of_two_runs_show_the_same_sections(tmp_path: Path, runs) -> None:
    """`report comparison.json` finds the runs check wrote beside it (their latency); `report head.json --base
    base.json` has no diff to link, and says so in the same section."""
    base, head = runs
    check_dir = tmp_path / "check"
    check_dir.mkdir()
    for name in ("base.json", "head.json"):
        shutil.copy(FIXTURE / name, check_dir / name)
    cmp = explain_comparison(compare_runs(base, head), parse_diff((FIXTURE / "pr.diff").read_text()))
    (check_dir / "comparison.json").write_text(cmp.model_dump_json(indent=2))
    assert (
        cli(
            [
                "report",
                str(check_dir / "comparison.json"),
                "--format",
                "html",
                "--out",
                str(tmp_path / "a.html"),
            ]
        )
        == 0
    )
    argv = [
        "report",
        str(check_dir / "head.json"),
        "--base",
        str(check_dir / "base.json"),
        "--format",
        "html",
    ]
    assert cli([*argv, "--out", str(tmp_path / "b.html")]) == 0
    a, b = (tmp_path / "a.html").read_text(), (tmp_path / "b.html").read_text()
    assert sections(a) == sections(b) and "causes" in sections(a) and "chart-latency" in sections(a)
    for html in (a, b):
        latency = html[html.index('id="chart-latency"') :]
        assert latency.index("<svg") < latency.index("</figure>"), "no latency chart"
    assert "(changed here)" in a and "Not linked" in b


def test_runs_beside_a_comparison_are_used_only_when_they_are_its_runs(tmp_path: Path, runs) -> None:
    base, head = runs
    cmp = compare_runs(base, head)
    (tmp_path / "comparison.json").write_text(cmp.model_dump_json())
    other = head.model_copy(
        update={"meta": head.meta.model_copy(update={"started_at": "1999-01-01T00:00:00"})}
    )
    write_run(tmp_path / "head.json", other)
    write_run(tmp_path / "base.json", base)
    out = tmp_path / "r.html"
    assert cli(["report", str(tmp_path / "comparison.json"), "--format", "html", "--out", str(out)]) == 0
    # the base run is this comparison's: its latency is shown; the head file is another run's: not used
    assert out.read_text() == render_html(cmp, base=base)
    assert out.read_text() != render_html(cmp, base=base, head=other)


# --- first differences and counts in English --------------------------------------------------------------------


def test_first_difference_shows_whole_values() -> None:
    title = "For Those About To Rock We Salute You"
    gold = ResultSet(columns=("title", "n"), type_oids=(25, 23), rows=[(title, 1), ("Let There Be Rock", 2)])
    pred = ResultSet(columns=("title", "n"), type_oids=(25, 23), rows=[("Let There Be Rock", 2)])
    v = compare_tables(gold, pred, opts=TableOptions(), keys=lambda: ())
    assert f"'{title}'" in v.message and "…" not in v.message
    assert "row(s)" not in v.message
    long = "x" * 300
    gold = ResultSet(columns=("k", "v"), type_oids=(25, 25), rows=[("a", long)])
    pred = ResultSet(columns=("k", "v"), type_oids=(25, 25), rows=[("a", long + "y")])
    message = compare_tables(gold, pred, opts=TableOptions(), keys=lambda: ()).message
    assert "…" in message and 80 <= message.index("…") - message.index("'x") <= 120


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        (2, 2, "the gold returns 2 rows and the agent's SQL 2 as well, but"),
        (1, 3, "the gold returns 1 row and the agent's SQL 3 rows"),
        (4, 1, "the gold returns 4 rows and the agent's SQL 1 row"),
    ],
)
def test_the_repair_prompt_counts_rows_in_english(gold: int, pred: int, expected: str) -> None:
    text = row_counts(
        Verdict(
            scorer="execution", match=False, kind="execution", details={"gold_rows": gold, "pred_rows": pred}
        )
    )
    assert text.startswith(expected) and "row(s)" not in text


def test_a_spent_budget_names_the_flag_the_user_gave() -> None:
    text = budget_spent(
        Limits(max_llm_calls=3), None, "LLM call budget exhausted (raise llm.budget.max_calls)"
    )
    assert "--max-llm-calls 3" in text and "llm.budget.max_calls" not in text
    # the config's own budget was the tighter one: that is the one to raise
    assert "llm.budget.max_calls" in budget_spent(
        Limits(max_llm_calls=50), 2, "... (raise llm.budget.max_calls)"
    )


def test_decimal_values_are_whole_too() -> None:
    gold = ResultSet(columns=("k", "v"), type_oids=(25, 1700), rows=[("a", Decimal("1435277.166666666667"))])
    pred = ResultSet(columns=("k", "v"), type_oids=(25, 1700), rows=[("a", Decimal("1393687.516666666667"))])
    message = compare_tables(gold, pred, opts=TableOptions(), keys=lambda: ()).message
    assert "1435277.166666666667" in message and "1393687.516666666667" in message
    assert json.dumps(message)  # plain text


def test_a_masked_secret_stays_three_stars_in_the_html_and_real_bold_still_renders():
    from bot.report.mdhtml import md_inline_html

    html = str(md_inline_html("the agent printed *** and ***; **bold** stays bold"))
    assert html.count("***") == 2 and "<strong>bold</strong>" in html
