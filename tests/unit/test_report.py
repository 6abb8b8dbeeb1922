"""Reports: golden files for the comment, the summary and JUnit; the comment's size limit; hostile text.

Golden files live in tests/fixtures/golden/; rewrite them after a deliberate change with
`SQLCANARY_UPDATE_GOLDEN=1 pytest tests/unit/test_report.py` and review the diff."""

from __future__ import annotations

import difflib
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from jinja2 import StrictUndefined, UndefinedError

from bot.base import textfilters as filters
from bot.base.results import CaseResult, Counts, RunMeta, RunResult, read_run, summarize
from bot.cli import main as cli
from bot.compare.comparison import CaseChange, Comparison, RateDelta, compare_head_only, compare_runs
from bot.config.gate_settings import GateSettings
from bot.report import charts
from bot.report.cuts import COMMENT_DETAILS, COMMENT_ROWS
from bot.report.render import (
    COMMENT_LIMIT,
    MARKER,
    environment,
    render_comment,
    render_html,
    render_json,
    render_junit,
    render_summary,
)

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
UPDATE = os.environ.get("SQLCANARY_UPDATE_GOLDEN") == "1"
DETAILS_URL = "https://example.test/runs/42#report"


@pytest.fixture(scope="module")
def base_run() -> RunResult:
    return read_run(GOLDEN / "base_run.json")


@pytest.fixture(scope="module")
def head_run() -> RunResult:
    return read_run(GOLDEN / "head_run.json")


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return Comparison.model_validate_json((GOLDEN / "comparison.json").read_text(encoding="utf-8"))


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"{path} is missing: run with SQLCANARY_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), text.splitlines(True), f"{name} (golden)", f"{name} (rendered)"
            )
        )
        pytest.fail(f"{name} differs from its golden file (SQLCANARY_UPDATE_GOLDEN=1 rewrites it):\n{diff}")


# --- a CommonMark-aware checker: what GitHub would see as fences, code spans and raw HTML -----------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
ALLOWED_TAGS = {"details", "summary", "sub", "code"}


def strip_code_spans(line: str) -> str:
    """The line without its code spans (CommonMark: a run of N backticks closes at the next run of exactly N)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            out.append(line[i : i + 2])
            i += 2
            continue
        if line[i] != "`":
            out.append(line[i])
            i += 1
            continue
        j = i
        while j < len(line) and line[j] == "`":
            j += 1
        closing = re.search(rf"(?<!`){'`' * (j - i)}(?!`)", line[j:])
        if closing is None:
            out.append(line[i:j])
            i = j
        else:
            i = j + closing.end()
    return "".join(out)


def markdown_outside_code(text: str) -> list[str]:
    """Check fences and <details> balance like a CommonMark reader; return the lines outside fenced code,
    with code spans removed."""
    fence = None
    depth = 0
    outside = []
    for number, line in enumerate(text.split("\n"), 1):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = None
            continue
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
            continue
        bare = strip_code_spans(line)
        depth += bare.count("<details>") - bare.count("</details>")
        assert depth >= 0, f"line {number} closes a <details> that is not open: {line[:120]!r}"
        outside.append(bare)
    assert fence is None, "a code fence is never closed"
    assert depth == 0, f"{depth} <details> never closed"
    return outside


def assert_inert(text: str) -> None:
    """Balanced, and nothing untrusted is live: no raw HTML but ours, no mention, no issue reference."""
    for line in markdown_outside_code(text):
        tags = {t.lower() for t in re.findall(r"</?([A-Za-z][A-Za-z0-9-]*)", line)}
        assert tags <= ALLOWED_TAGS, f"raw HTML {tags - ALLOWED_TAGS} in {line[:160]!r}"
        assert not re.search(r"(?<![\w`])@[A-Za-z]", line), f"a live mention in {line[:160]!r}"
        assert not re.search(r"(?<![\w&])#\d", line), f"a live issue reference in {line[:160]!r}"


@pytest.mark.parametrize(
    "bad",
    [
        "```sql\nSELECT 1\n",  # a fence never closed
        "<details><summary>x</summary>\n\ntext\n",  # a <details> never closed
        "```sql\nSELECT '\n```\n<script>alert(1)</script>\n```\n",  # SQL closed a short fence early
        "| a | hi @octocat |",  # a live mention
        "see #12",  # a live issue reference
        "`ok` <img src=x>",  # raw HTML outside code
    ],
)
def test_the_markdown_checker_catches_what_it_should(bad: str) -> None:
    with pytest.raises(AssertionError):
        assert_inert(bad)


def test_the_markdown_checker_accepts_inert_text() -> None:
    assert_inert("````sql\n```\n</details>\n````\n| `</details>` | @\u200bme | ``a ` b`` |\n")


# --- golden files ----------------------------------------------------------------------------------------


def test_comparison_golden_is_what_compare_runs_writes() -> None:
    """comparison.json (which the other golden tests render) is compare_runs of the two golden runs, so a
    change in compare_runs shows up here first."""
    base, head = read_run(GOLDEN / "base_run.json"), read_run(GOLDEN / "head_run.json")
    assert_golden("comparison.json", compare_runs(base, head).model_dump_json(indent=2) + "\n")


def test_comment_golden(comparison: Comparison) -> None:
    text = render_comment(comparison, details_url=DETAILS_URL)
    assert_golden("comment.md", text)
    assert text.startswith(MARKER + "\n")
    assert_inert(text)


def test_comment_for_a_single_run_golden(head_run: RunResult) -> None:
    text = render_comment(head_run)
    assert_golden("comment_run.md", text)
    assert text.startswith(MARKER + "\n")
    assert "54.5%" in text and "shop-traffic-dau-id-nov" in text
    assert_inert(text)


def test_summary_golden(comparison: Comparison) -> None:
    text = render_summary(comparison, details_url=DETAILS_URL)
    assert_golden("summary.md", text)
    assert_inert(text)


def test_junit_golden(head_run: RunResult, comparison: Comparison) -> None:
    assert_golden("junit.xml", render_junit(head_run, comparison))


# --- what the comment says -------------------------------------------------------------------------------


def test_comment_names_every_change_and_the_provenance(comparison: Comparison) -> None:
    text = render_comment(comparison, details_url=DETAILS_URL)
    assert "❌ FAIL" in text.splitlines()[1]
    assert "72.7% → **54.5%** (-18.2 pp)" in text
    for c in comparison.cases:
        if c.transition not in ("still_passing", "still_failing"):
            assert filters.md_code(c.id, 80) in text, c.id
    assert "### Still failing" not in text  # the comment lists changes; the summary lists everything
    assert "3/3 → 2/3 (p=0.500)" in text  # the flaky case with its pass counts
    assert "`timeout` → `crash`" in text
    footer = text.split("\n---\n", 1)[1]
    for needle in (
        "`1111111111` → head `2222222222`",
        "`201b91045af8`",
        "`17a8a45dea00`",
        "`python:agent.py:answer`",
        "repeats 3 → 3",
        "evaluator `1`",
    ):
        assert needle in footer


def test_summary_is_fuller_than_the_comment(comparison: Comparison) -> None:
    summary = render_summary(comparison)
    assert "### Still failing (1)" in summary and "## Pass rate by tag" in summary
    assert "| `hostile` |" in summary and "| `index` |" in summary
    assert not summary.startswith(MARKER)


def test_passing_comparison_says_pass(comparison: Comparison) -> None:
    quiet = comparison.model_copy(
        update={
            "verdict": "pass",
            "reasons": (),
            "cases": comparison.of("still_passing"),
            "counts": {"still_passing": 2},
        }
    )
    text = render_comment(quiet)
    assert "## sqlcanary: ✅ PASS: no regressions" in text
    assert "<details>" not in text


def test_incomparable_runs_say_why(comparison: Comparison) -> None:
    reason = "evaluator version differs: base 1, head 2"
    cmp = comparison.model_copy(update={"verdict": "incomparable", "reasons": (reason,)})
    text = render_comment(cmp)
    assert "NOT COMPARABLE" in text and "evaluator version differs" in text


# --- renamed cases and head-only comparisons -------------------------------------------------------------

RUNS = GOLDEN.parent / "runs"


def test_renamed_cases_are_shown_as_renamed_with_their_outcome() -> None:
    cmp = compare_runs(read_run(RUNS / "rename_base.json"), read_run(RUNS / "rename_head.json"))
    text = render_comment(cmp)
    assert "## sqlcanary: ✅ PASS: no regressions (1 fixed)" in text
    assert "### Renamed (2)" in text and "### Removed" not in text
    assert (
        "| `commerce-gmv-total` (renamed from `gmv-total`) | Total GMV | **Fixed**: column `sum`: gold 10"
        in text
    )
    assert "| `traffic-dau-id` (renamed from `dau-id`) | ID market DAU | **Still passing** |" in text
    assert "<code>commerce-gmv-total</code> · Renamed (fixed)</summary>" in text  # its SQL, as for a fix
    assert_inert(text)
    html = render_html(cmp)
    assert "renamed from gmv-total" in html and '>Renamed</span> <span class="muted">fixed</span>' in html


def test_a_renamed_regression_fails_in_every_report() -> None:
    base, head = read_run(RUNS / "gate_base.json"), read_run(RUNS / "gate_head.json")
    cmp = compare_runs(base, head)
    text = render_comment(cmp)
    assert "## sqlcanary: ❌ FAIL: 2 regressed cases" in text
    assert (
        "| `new-broken` (renamed from `old-broken`) | Orders per item | **Regressed**: 1 gold row(s)" in text
    )
    root = ET.fromstring(render_junit(head, cmp).encode("utf-8"))
    broken = next(c for c in root.iter("testcase") if c.get("name") == "new-broken")
    assert broken.find("failure").get("message", "").startswith("REGRESSION (passed on base, as old-broken)")


def test_head_only_reports_say_no_baseline() -> None:
    head = read_run(RUNS / "k1_head.json")
    cmp = compare_head_only(head, reason="base 1111111111 has no sqlcanary.yml.")  # capitalised, one period
    comment = render_comment(cmp)
    assert comment.startswith(MARKER + "\n")
    assert "## sqlcanary: ✅ PASS: no baseline: head only, 3 of 8 decidable cases pass" in comment
    assert (
        "**No baseline: head only.** Base 1111111111 has no sqlcanary.yml. The head alone is judged: pass rate "
        "**37.5%**, 3 of 8 decidable cases passed; no minimum pass rate is set, so nothing can fail"
        in comment
    )
    assert "### Failed (3)" in comment and "### New" not in comment  # laid out like a single run
    assert "| `traffic` | 50.0% | 1 | 1 | 0 | 0 |" not in comment  # the comment keeps rates short ...
    summary = render_summary(cmp)
    assert (
        "No baseline: head only" in summary and "| `traffic` | 50.0% | 1 | 1 | 0 | 0 |" in summary
    )  # ... the summary has them
    assert "base `" not in comment.split("\n---\n", 1)[1]  # the footer names no base
    for text in (comment, summary):
        assert_inert(text)
    html = render_html(cmp, head=head)
    assert (
        "<b>No baseline: head only.</b> Base 1111111111 has no sqlcanary.yml. The head alone is judged: pass rate 37.5%"
        in html
    )
    assert html.count("<svg") == 4
    junit = ET.fromstring(render_junit(head, cmp).encode("utf-8"))
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["baseline"].startswith("No baseline: head only.") and "base_sha" not in props
    assert props["verdict"] == "pass"


def test_head_only_below_the_minimum_fails() -> None:
    cmp = compare_head_only(read_run(RUNS / "k1_head.json"), gate=GateSettings(min_pass_rate=0.5))
    text = render_comment(cmp)
    assert "## sqlcanary: ❌ FAIL: no baseline: head only" in text
    assert "pass rate **37.5%**, 3 of 8 decidable cases passed (minimum 50.0%)" in text
    assert "> **Gate:** head pass rate 37.5% is below the minimum 50.0%" in text


def test_a_version_1_comparison_still_renders(comparison: Comparison) -> None:
    raw = json.loads(comparison.model_dump_json())
    raw["schema_version"] = 1
    for key in ("baseline", "baseline_reason"):
        del raw[key]
    for key in ("allow_removed", "allow_invalid"):
        del raw["gate"][key]
    for case in raw["cases"]:
        del case["renamed_from"], case["outcome"]
    old = Comparison.model_validate(raw)
    assert render_comment(old) == render_comment(comparison)


# --- the size limit --------------------------------------------------------------------------------------


def _meta(sha: str) -> RunMeta:
    return RunMeta(suite="big", suite_hash="feedface", fixtures={"db": "cafe"}, git_sha=sha, agent="cmd")


def big_comparison(n: int = 2000) -> Comparison:
    hostile_sql = "SELECT '```' AS a,\n'</details>' AS b\n````\n-- @octocat\n" + "x, " * 300 + "1"
    changes = tuple(
        CaseChange(
            id=f"case-{i:04d}",
            transition="regressed",
            category="query",
            tags=("t",),
            question=f"Question {i}: how many <b>orders</b> did @octocat place in #{i}? " + "q" * 80,
            base_status="passed",
            head_status="failed",
            base_passes=1,
            base_repeats=1,
            head_repeats=1,
            reason=f"column `n`: gold {i}, prediction {i + 1} ``` </details>",
            structural="filters differ",
            head_sql=hostile_sql,
            base_sql="SELECT 1",
        )
        for i in range(n)
    )
    base, head = Counts(total=n, passed=n), Counts(total=n, failed=n)
    return Comparison(
        verdict="regressions",
        reasons=(f"{n} case(s) regressed",),
        base=_meta("a" * 40),
        head=_meta("b" * 40),
        overall=RateDelta(base=base, head=head, base_rate=1.0, head_rate=0.0, delta=-1.0),
        counts={"regressed": n},
        cases=changes,
    )


def _shown_rows(text: str) -> int:
    return len(re.findall(r"^\| `case-\d{4}` \|", text, flags=re.M))


def test_comment_with_2000_regressions_fits_and_stays_well_formed() -> None:
    cmp = big_comparison()
    text = render_comment(cmp, details_url=DETAILS_URL)
    assert len(text) <= COMMENT_LIMIT
    assert text.startswith(MARKER + "\n")
    assert_inert(text)
    shown = _shown_rows(text)
    assert shown == COMMENT_ROWS  # the comment's cut; the summary and the HTML report list every case
    assert text.count("<details>") == COMMENT_DETAILS + 2  # the folded table, the folded SQL and its cases
    assert len(render_summary(cmp, details_url=DETAILS_URL)) > 20 * len(text)
    last = text.rstrip("\n").splitlines()[-1]
    assert last == f"… {2000 - shown} more cases, see the [full report]({DETAILS_URL})"
    assert "`case-0000`" in text  # the first rows are kept, whole
    assert "repeats 1 → 1" in text  # the footer survives


@pytest.mark.parametrize("limit", [65_536, 20_000, 3_000])
def test_every_limit_is_met_by_cutting_whole_rows_and_blocks(limit: int) -> None:
    text = render_comment(big_comparison(300), limit=limit)
    assert len(text) <= limit
    assert text.startswith(MARKER)
    assert_inert(text)
    assert text.rstrip().endswith("more cases, see the full report")


def test_sql_blocks_go_before_rows() -> None:
    cmp = big_comparison(40)
    full = render_summary(cmp, limit=10**7)
    assert full.count("<details>") == 40
    text = render_summary(cmp, limit=len(full) - 1)
    assert _shown_rows(text) == 40  # every row kept ...
    assert 0 < text.count("<details>") < 40  # ... some SQL blocks dropped
    assert_inert(text)
    assert "… SQL of" in text


def test_a_limit_smaller_than_the_header_still_gives_a_marked_comment() -> None:
    text = render_comment(big_comparison(5), limit=120, details_url=DETAILS_URL)
    assert len(text) <= 120 and text.startswith(MARKER)
    assert_inert(text)


def test_summary_limit_counts_bytes() -> None:
    cmp = big_comparison(200)
    cmp = cmp.model_copy(
        update={"cases": tuple(c.model_copy(update={"question": "é€😀" * 40}) for c in cmp.cases)}
    )
    text = render_summary(cmp, limit=30_000)
    assert len(text.encode("utf-8")) <= 30_000
    assert len(text) < 30_000  # characters alone would have allowed more
    assert_inert(text)


# --- hostile text ----------------------------------------------------------------------------------------


def test_hostile_text_is_inert_everywhere(comparison: Comparison, head_run: RunResult) -> None:
    for text in (render_comment(comparison), render_summary(comparison), render_comment(head_run)):
        assert_inert(text)
        assert "@\u200boctocat" in text  # shown, but not a mention
        assert "&lt;script&gt;" in text
        # the SQL holds ```` so its fence (a SQL block, or the base → head diff) is longer
        assert re.search(r"^`````(sql|diff)$", text, re.M), text


def test_filters() -> None:
    assert filters.pct(0.8) == "80.0%" and filters.pct(None) == "n/a"
    assert filters.delta(0.025) == "+2.5 pp" and filters.delta(-0.1) == "-10.0 pp"
    assert filters.delta(0.0) == "±0.0 pp" and filters.delta(None) == "n/a"
    assert filters.truncate_middle("abcdefghijklmnopqrstuvwxyz", 11) == "abcd … wxyz"
    assert len(filters.truncate_middle("x" * 500, 50)) == 50
    # a cut through words ends and starts at a word's edge (a half word reads as a typo), never longer
    reason = "coincidental: not on perturbed copy 2 (orders.amount = 100 on 5 rows): column `sum` differs"
    cut = filters.truncate_middle(reason, 60)
    assert cut == "coincidental: not on … rows): column `sum` differs" and len(cut) <= 60
    assert filters.md_code("a ``b`` c") == "```a ``b`` c```"
    assert filters.md_code("`x`") == "`` `x` ``"
    assert filters.md_code("a|b") == "`a\\|b`"
    assert filters.md_fence("x\n`````\ny", "sql").startswith("``````sql\n")
    assert filters.md_fence("x", "sql; rm -rf") == "```sqlrm-rf\nx\n```"
    assert filters.md_escape("a|b <i>*x*</i> @me #12\nnext") == (
        "a\\|b &lt;i&gt;\\*x\\*&lt;/i&gt; @\u200bme #\u200b12 next"
    )
    assert filters.md_text("column `a|b`: <x>") == "column `a\\|b`: &lt;x&gt;"
    assert filters.md_url("https://x.test/a (b)") == "https://x.test/a%20%28b%29"
    assert filters.clean("a\x00b\x1bc\ud800") == "abc"


def test_environment_is_strict() -> None:
    env = environment()
    assert env.undefined is StrictUndefined
    with pytest.raises(UndefinedError):
        env.from_string("{{ nothing_here }}").render()
    assert env.get_template("comment.md.j2").filename.endswith(str(Path("templates", "comment.md.j2")))


# --- JUnit -----------------------------------------------------------------------------------------------


def test_junit_is_valid_and_maps_every_status(head_run: RunResult, comparison: Comparison) -> None:
    root = ET.fromstring(render_junit(head_run, comparison).encode("utf-8"))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert len(cases) == len(head_run.cases)
    assert root.get("tests") == str(len(head_run.cases))
    regressed = cases["shop-traffic-dau-id-nov"].find("failure")
    assert regressed is not None and regressed.get("message", "").startswith("REGRESSION (passed on base")
    assert cases["shop-traffic-dau-id-nov"].get("classname") == "query"
    assert cases["shop-mgmt-archive-orders"].find("error").get("type") == "crash"
    skipped = cases["shop-eff-index-orders"].find("skipped")
    assert skipped is not None and skipped.get("message", "").startswith("invalid: gold failed")
    assert len(list(cases["shop-commerce-gmv-th-dec"])) == 0  # passed: an empty testcase
    flaky = cases["shop-pers-utc-dau-th-nov"]
    assert len(list(flaky)) == 0  # flaky but passing by majority: not a failure
    assert root.find("testsuite").get("failures") == "3" and root.find("testsuite").get("errors") == "2"


def test_junit_survives_control_characters_and_markup(head_run: RunResult) -> None:
    nasty = CaseResult(
        id="bad\x00id<&>",
        status="failed",
        category="",
        tags=("x",),
        reason="bell\x07 <![CDATA[ ]]> \x1b[31m",
    )
    run = head_run.model_copy(update={"cases": (nasty,), "summary": summarize([nasty])})
    root = ET.fromstring(render_junit(run).encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case.get("name") == "badid<&>" and case.get("classname") == "x"
    assert "<![CDATA[ ]]>" in case.find("failure").text


# --- HTML and JSON ---------------------------------------------------------------------------------------


def test_html_is_standalone_and_escaped(
    comparison: Comparison, head_run: RunResult, base_run: RunResult
) -> None:
    html = render_html(comparison, head=head_run, base=base_run)
    assert html.count("<svg") == 4
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert not re.search(r"<[^>]*\s(src|href)\s*=", html), "the report must not fetch anything"
    assert "<link" not in html and "@import" not in html
    assert charts.BASE_COLOR in html and charts.HEAD_COLOR in html
    assert charts.GROUP_COLORS["regressed"] in html


def test_html_for_a_run_and_without_timings(head_run: RunResult, comparison: Comparison) -> None:
    assert render_html(head_run).count("<svg") == 4
    no_runs = render_html(comparison)  # a Comparison alone has no timings
    assert no_runs.count("<svg") == 3 and "pass the runs to see their timings" in no_runs


def test_json_round_trips(comparison: Comparison, head_run: RunResult) -> None:
    assert Comparison.model_validate_json(render_json(comparison)) == comparison
    assert RunResult.model_validate(json.loads(render_json(head_run))) == head_run


def test_histogram_keeps_every_case() -> None:
    svg = str(charts.histogram([("head", charts.HEAD_COLOR, [0.01] * 50 + [0.2] * 5 + [30.0])], title="t"))
    counts = [int(n) for n in re.findall(r"head: (\d+) case\(s\)", svg)]
    assert sum(counts) == 56
    assert "and slower" in svg  # the outlier went to the last bar instead of squashing the rest


def test_chart_labels_are_escaped() -> None:
    svg = str(
        charts.grouped_bars(["<script>x</script>"], [charts.Series("head", "#000", (0.5,))], title="<t>")
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;t&gt;" in svg


# --- the command -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["md", "summary", "html", "junit", "json"])
def test_report_command_writes_every_format(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"report.{fmt}"
    head, base = str(GOLDEN / "head_run.json"), str(GOLDEN / "base_run.json")
    assert cli(["report", head, "--base", base, "--format", fmt, "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    if fmt == "junit":
        ET.fromstring(text.encode("utf-8"))
    elif fmt == "json":
        assert Comparison.model_validate_json(text).counts["regressed"] == 3
    else:
        assert "shop-traffic-dau-id-nov" in text


def test_report_command_reads_a_comparison_and_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["report", str(GOLDEN / "comparison.json"), "--format", "md"]) == 0
    assert "3 regressed cases" in capsys.readouterr().out
    assert cli(["report", str(GOLDEN / "head_run.json"), "--format", "md", "--limit", "2000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(MARKER) and len(out) <= 2000


def test_report_command_rejects_bad_input(tmp_path: Path) -> None:
    assert cli(["report", str(tmp_path / "missing.json")]) == 2
    assert cli(["report", str(GOLDEN / "comparison.json"), "--format", "junit"]) == 2
    assert cli(["report", str(GOLDEN / "comparison.json"), "--base", str(GOLDEN / "base_run.json")]) == 2
    assert cli(["report", str(GOLDEN / "head_run.json"), "--format", "pdf"]) == 2
