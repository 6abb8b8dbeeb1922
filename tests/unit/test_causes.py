"""Cause linking (bot.compare.causes) and the per-case explanation every report shares.

The two-cause fixture (tests/fixtures/causes, rebuilt by its make_fixture.py from a real `sqlcanary check` of the
shop example with `missing_tz_filter` and `cpc_wrong_denominator` planted at once) is linked to its own diff and
rendered into golden comment and HTML files: `SQLCANARY_UPDATE_GOLDEN=1` rewrites them."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from bot.base.results import read_run
from bot.cli import main as cli
from bot.compare.causes import Regressed, explain_comparison, link_causes
from bot.compare.comparison import COMPARISON_SCHEMA_VERSION, Comparison, compare_runs
from bot.compare.diff import FileDiff, Hunk, added_file, parse_diff
from bot.compare.spans import suite_folder
from bot.github.publish import with_lead
from bot.kb.files import KBFiles
from bot.modes.repair import no_repair_note
from bot.repair.context import failure_context
from bot.repair.prompts import case_messages
from bot.report.render import render_comment, render_html, render_summary
from tests.unit.test_report import assert_golden, assert_inert

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "causes"
REGRESSIONS = Path(__file__).resolve().parents[2] / "benchmarks" / "shop" / "regressions"
SUITE = "benchmarks/shop"

DIFF = """\
diff --git a/s/kb/a.yaml b/s/kb/a.yaml
index 1..2 100644
--- a/s/kb/a.yaml
+++ b/s/kb/a.yaml
@@ -3 +3 @@ name: a
-x: 1
+x: 2
@@ -10,2 +9,0 @@ y
-gone: 1
-gone: 2
@@ -20,0 +19,2 @@ z
+new: 1
+new: 2
diff --git a/s/kb/old.yaml b/s/kb/old.yaml
deleted file mode 100644
--- a/s/kb/old.yaml
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
diff --git "a/s/kb/caf\\303\\251.yaml" "b/s/kb/caf\\303\\251.yaml"
--- "a/s/kb/caf\\303\\251.yaml"
+++ "b/s/kb/caf\\303\\251.yaml"
@@ -1 +1 @@
-p
+q
"""


def test_parse_diff_reads_files_hunks_and_both_numberings() -> None:
    files = {f.path: f for f in parse_diff(DIFF)}
    assert set(files) == {"s/kb/a.yaml", "s/kb/old.yaml", "s/kb/café.yaml"}
    a = files["s/kb/a.yaml"].hunks
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in a] == [
        (3, 1, 3, 1),
        (10, 2, 9, 0),
        (20, 0, 19, 2),
    ]
    assert a[0].text == "-x: 1\n+x: 2"
    assert [h.lines for h in a] == [("head", 3, 3), ("base", 10, 11), ("head", 19, 20)]
    assert files["s/kb/old.yaml"].hunks[0].lines == ("base", 1, 2)


def test_a_new_untracked_file_is_all_added() -> None:
    diff = added_file("s/kb/n.yaml", "a\nb\nc\n")
    assert diff.hunks[0].lines == ("head", 1, 3) and diff.hunks[0].text.startswith("+a\n+b")


def _link(*cases: Regressed, roots: tuple[str, ...] = ("s",)):
    return link_causes(cases, parse_diff(DIFF), roots=roots)


def test_head_spans_meet_new_lines_and_base_spans_meet_old_lines() -> None:
    linked = _link(
        Regressed("edited", head_used=("kb/a.yaml:1-5",)),
        # lines 10-11 were deleted: only the base's answer could cite them
        Regressed("deleted", head_used=("kb/a.yaml:12-14",), base_used=("kb/a.yaml:9-12",)),
        Regressed("inserted", head_used=("kb/a.yaml:18-19",)),
        Regressed(
            "untouched", head_used=("kb/a.yaml:5-8", "kb/other.yaml:1-99"), base_used=("kb/a.yaml:5-8",)
        ),
        Regressed("no-spans"),
        Regressed("removed-file", base_used=("kb/old.yaml:1-2",)),
    )
    by_where = {(c.file, c.where): c.cases for c in linked.causes}
    assert by_where == {
        ("s/kb/a.yaml", "line 3"): ("edited",),
        ("s/kb/a.yaml", "lines 10–11 (removed)"): ("deleted",),
        ("s/kb/a.yaml", "lines 19–20"): ("inserted",),
        ("s/kb/old.yaml", "lines 1–2 (removed)"): ("removed-file",),
    }
    assert linked.unexplained == ("no-spans", "untouched")


def test_a_pure_deletion_inside_a_head_span_touches_it_but_not_next_to_it() -> None:
    inside = _link(Regressed("in", head_used=("kb/a.yaml:8-12",)))
    after = _link(Regressed("after", head_used=("kb/a.yaml:10-12",)))
    assert [c.cases for c in inside.causes] == [("in",)]
    assert after.unexplained == ("after",)


def test_cases_with_the_same_changed_lines_of_a_file_form_one_cause() -> None:
    linked = _link(
        Regressed("one", head_used=("kb/a.yaml:1-40",)),
        Regressed("two", head_used=("kb/a.yaml:1-40",)),
        Regressed("three", head_used=("kb/a.yaml:2-4",)),
    )
    assert [(c.where, c.cases) for c in linked.causes] == [
        ("line 3", ("one", "three", "two")),
        ("lines 10–11 (removed), 19–20", ("one", "two")),
    ]


def test_used_paths_resolve_under_the_suite_or_config_folder() -> None:
    case = Regressed("x", head_used=("kb/a.yaml:3",))
    assert _link(case, roots=("elsewhere", "s")).causes[0].file == "s/kb/a.yaml"
    assert _link(case, roots=("elsewhere",)).unexplained == ("x",)
    repo_relative = Regressed("y", head_used=("s/kb/a.yaml:3-3",))
    assert _link(repo_relative, roots=()).causes[0].cases == ("y",)


def test_suite_folder_from_a_worktree_path_and_repository_root_sources() -> None:
    sources = ["benchmarks/shop/cases/a.yml:3", "benchmarks/shop/cases/b.yml:9", None]
    assert suite_folder("/tmp/sqlcanary-head-x/tree/benchmarks/shop", sources) == "benchmarks/shop"
    assert suite_folder("benchmarks/shop", sources) == "benchmarks/shop"
    assert suite_folder("/elsewhere/suite", sources) == ""


# --- the two-cause fixture ---------------------------------------------------------------------------------


def breaks(name: str) -> set[str]:
    return set(yaml.safe_load((REGRESSIONS / f"{name}.yml").read_text())["breaks"])


@pytest.fixture(scope="module")
def two_causes() -> Comparison:
    base, head = read_run(FIXTURE / "base.json"), read_run(FIXTURE / "head.json")
    gold = {k: tuple(v) for k, v in json.loads((FIXTURE / "gold.json").read_text()).items()}
    diff = parse_diff((FIXTURE / "pr.diff").read_text())
    # no roots given: the suite folder is found from the head's meta and the case sources
    return explain_comparison(compare_runs(base, head), diff, gold=gold)


def test_the_two_causes_name_their_lines_and_exactly_their_cases(two_causes: Comparison) -> None:
    causes = {(c.file, c.where): set(c.cases) for c in two_causes.causes}
    assert causes == {
        (f"{SUITE}/kb/metrics/dau.yaml", "line 9"): breaks("missing_tz_filter"),
        (f"{SUITE}/kb/metrics/cpc.yaml", "line 6"): breaks("cpc_wrong_denominator"),
    }
    assert two_causes.unexplained == ()
    assert two_causes.linked and two_causes.schema_version == COMPARISON_SCHEMA_VERSION
    assert {c.id for c in two_causes.judged_as("regressed")} == breaks("missing_tz_filter") | breaks(
        "cpc_wrong_denominator"
    )


def _first_section(comment: str) -> str:
    start = comment.index("\n### ")
    return comment[start : comment.index("\n#", start + 5)]


def cause_items(section: str) -> dict[str, set[str]]:
    """{file: case ids} of the causes' bullets: the ids on the bullet's line, or folded under its diff."""
    found = {}
    for item in re.split(r"^(?=- )", section, flags=re.M)[1:]:
        if not item.startswith("- `"):
            continue
        item = re.split(r"^(?=[^ \n])", item, flags=re.M)[1]  # up to the first line not indented
        prose = re.sub(r"^  ```diff\n.*?^  ```\n", "", item, flags=re.M | re.S)
        spans = re.findall(r"`([^`]+)`", prose)
        found[spans[0]] = set(spans[1:])
    return found


def unfolded(text: str) -> str:
    """`text` without its folded parts (every outermost <details> … </details>)."""
    kept, depth = [], 0
    for line in text.splitlines():
        opened = line.lstrip().startswith("<details>")
        depth += opened
        if depth == 0:
            kept.append(line)
        depth -= line.rstrip().endswith("</details>")
    return "\n".join(kept)


def occurrences(case_id: str, text: str) -> int:
    return len(re.findall(rf"(?<![\w-]){re.escape(case_id)}(?![\w-])", text))


def test_the_comment_opens_with_the_causes(two_causes: Comparison) -> None:
    text = render_comment(two_causes)
    first = _first_section(text)
    assert first.startswith("\n### Why: the lines this change touched")
    assert text.index("### Why") < text.index("| Regressed |") < text.index("### Regressed (16)")
    assert cause_items(first) == {c.file: set(c.cases) for c in two_causes.causes}
    assert "  -  - tz_type = 'local'\n  +filters: []" in first
    # few cases on the bullet's line, many folded under its diff
    assert "→ **1 regressed**: `shop-ads-cpc-by-region-q4`" in first
    assert "→ **15 regressed**\n" in first and "<details><summary>the 15 cases</summary>" in first
    assert_inert(text)


def test_every_case_block_explains_the_case(two_causes: Comparison) -> None:
    text = render_comment(two_causes)
    block = text[text.index("<details><summary><code>shop-ads-cpc-by-region-q4") :]
    block = block[: block.index("</details>")]
    for part in (
        "**Question:** Cost per click by region in Q4 2025",
        "**Verdict:** regressed: passed on base, fails on head",
        f"**Cause:** `{SUITE}/kb/metrics/cpc.yaml` line 6 (changed here)",
        "**First difference:**",
        "**Structural difference:**",
        "gold:\n\n```sql\n",
        "prediction, base → head:\n\n```diff\n--- base\n+++ head\n",
    ):
        assert part in block, part
    assert re.search(r"^-.*clicks", block, re.M) and re.search(r"^\+.*impressions", block, re.M)


def test_two_cause_golden_comment_and_html(two_causes: Comparison) -> None:
    head, base = read_run(FIXTURE / "head.json"), read_run(FIXTURE / "base.json")
    assert_golden("causes_comment.md", render_comment(two_causes))
    html = render_html(two_causes, head=head, base=base)
    assert_golden("causes_report.html", html)
    assert html.index('id="causes"') < html.index('id="regressed"') < html.index("<h2>Charts</h2>")


# --- the one-line fixture: the planted pull request ------------------------------------------------


@pytest.fixture(scope="module")
def one_line() -> Comparison:
    """`missing_tz_filter` alone, checked with attribution (make_fixture.py one-line): one broken KB line, 15
    regressed cases, the attribution's notes among the warnings; the Action found no repair, with no LLM."""
    return Comparison.model_validate_json((FIXTURE / "one_line" / "comparison.json").read_text())


def one_line_comment(cmp: Comparison) -> str:
    """The sticky comment as the Action posts it: no LLM configured, and the only revert is the whole change."""
    lead = "**Repair:** " + no_repair_note(llm_asked=False, revert="whole")
    return with_lead(render_comment(cmp, details_url="https://example.test/runs/42#report"), lead)


def test_the_one_line_fixture_is_the_planted_pull_request(one_line: Comparison) -> None:
    regressed = {c.id for c in one_line.judged_as("regressed")}
    assert regressed == breaks("missing_tz_filter") and len(regressed) == 15
    assert [(c.file, c.where) for c in one_line.causes] == [(f"{SUITE}/kb/metrics/dau.yaml", "line 9")]
    assert set(one_line.causes[0].cases) == regressed and one_line.unexplained == ()
    # the attribution's notes name the 15 cases again, twice: the comment must not
    assert sum(all(i in w for i in regressed) for w in one_line.warnings) == 2


def test_the_planted_pull_requests_comment_is_short_and_names_each_case_once(one_line: Comparison) -> None:
    text = one_line_comment(one_line)
    assert_golden("causes_one_line_comment.md", text)
    assert len(text) <= 8000
    assert_inert(text)
    head, rest = text.split("\n### Regressed (15)", 1)
    for case in breaks("missing_tz_filter"):
        assert occurrences(case, head) == 1, case  # under the cause only: not in the gate line nor the notes
        assert occurrences(case, unfolded(rest)) == 0, case  # the table and the SQL are folded
    assert "> **Gate:** 15 case(s) regressed, more than the 0 allowed: the 15 cases above" in head
    assert "alone makes the 15 cases above pass again: that change broke them" in head
    assert text.count("<details>") == text.count("</details>")


def test_the_first_screen_is_verdict_rates_cause_and_repair(one_line: Comparison) -> None:
    lines = [line for line in one_line_comment(one_line).splitlines() if line.strip()][:15]
    screen = "\n".join(lines)
    for part in (
        "## sqlcanary: ❌ FAIL: 15 regressed cases",
        "**Repair:** no repair: no LLM configured, and the only revert that restores these cases undoes every "
        "KB change of the pull request",
        "**Pass rate** 100.0% → **53.1%**",
        f"- `{SUITE}/kb/metrics/dau.yaml` line 9 (changed here) → **15 regressed**",
        "  +filters: []",
    ):
        assert part in screen, part
    assert "no repair holds" not in one_line_comment(one_line)


def test_the_html_report_and_the_summary_keep_what_the_comment_folds(one_line: Comparison) -> None:
    comment = one_line_comment(one_line)
    html, summary = render_html(one_line), render_summary(one_line)
    cut = [c for c in one_line.judged_as("regressed") if f"| `{c.id}` |" not in comment]
    assert len(cut) == 5  # the comment lists 10 rows, and says so
    assert "16 cases" not in comment and "15 cases: the first 10 here" in comment
    for case in one_line.judged_as("regressed"):
        assert case.question.replace("_", "\\_") in summary and case.id in html
    page = html_lib.unescape(re.sub(r"<[^>]+>", "", html))
    for note in one_line.warnings:  # the full notes, every id
        assert note.replace("`", "") in page


@pytest.mark.parametrize(
    ("llm_asked", "kind", "says"),
    [
        (
            False,
            "whole",
            "no LLM configured, and the only revert that restores these cases undoes every KB change",
        ),
        (
            True,
            "failed",
            "no LLM edit fixed a case, and no partial revert of the pull request's KB changes holds",
        ),
        (False, "none", "no KB change of the pull request was found to cause them"),
        (False, "", "no revert was tried"),
    ],
)
def test_no_repair_says_why(llm_asked: bool, kind: str, says: str) -> None:
    assert says in no_repair_note(llm_asked=llm_asked, revert=kind)


@pytest.mark.parametrize("limit", [3000, 6000, 20_000])
def test_a_small_limit_keeps_the_causes_and_stays_well_formed(two_causes: Comparison, limit: int) -> None:
    for text in (render_comment(two_causes, limit=limit), render_summary(two_causes, limit=limit)):
        assert len(text.encode()) <= limit
        assert text.count("<details>") == text.count("</details>")
        assert_inert(text)
    assert "### Why" in render_comment(two_causes, limit=limit)


def test_a_version_2_comparison_still_loads_and_renders(two_causes: Comparison) -> None:
    raw = json.loads(two_causes.model_dump_json())
    raw["schema_version"] = 2
    for key in ("linked", "changed_files", "causes", "unexplained"):
        del raw[key]
    for case in raw["cases"]:
        del case["gold_sql"], case["head_used"], case["base_used"]
    old = Comparison.model_validate(raw)
    assert not old.linked and "### Why" not in render_comment(old)


def test_hostile_diff_text_stays_inert(two_causes: Comparison) -> None:
    hostile = Hunk(
        old_start=1,
        old_count=1,
        new_start=1,
        new_count=1,
        text="-```\n+</details><script>x</script> @octocat #1\n+````",
    )
    cause = two_causes.causes[0].model_copy(update={"hunks": (hostile,), "file": "kb/`x`|<b>.yaml"})
    text = render_comment(two_causes.model_copy(update={"causes": (cause, *two_causes.causes[1:])}))
    assert_inert(text)
    assert "`````diff" in text


# --- sqlcanary show ----------------------------------------------------------------------------------------


@pytest.fixture
def check_dir(tmp_path: Path, two_causes: Comparison) -> Path:
    for name in ("base.json", "head.json"):
        (tmp_path / name).write_text((FIXTURE / name).read_text())
    (tmp_path / "comparison.json").write_text(two_causes.model_dump_json(indent=2))
    return tmp_path


def test_show_prints_a_case_of_a_saved_run(check_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["show", str(check_dir / "head.json"), "shop-traffic-dau-id-nov"]) == 0
    out = capsys.readouterr().out
    for part in (
        "== shop-traffic-dau-id-nov",
        "question:          ID market DAU in November 2025",
        "verdict:           regressed: passed on base, fails on head",
        f"cause:             {SUITE}/kb/metrics/dau.yaml line 9 (changed here)",
        "first difference:",
        "gold SQL:",
        "prediction, base → head:",
        "    -  - tz_type = 'local'",
    ):
        assert part in out, part
    assert "\x1b" not in out


def test_show_without_ids_prints_every_failing_case(
    check_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["show", str(check_dir / "head.json")]) == 0
    shown = re.findall(r"^== (\S+)", capsys.readouterr().out, re.M)
    assert set(shown) == breaks("missing_tz_filter") | breaks("cpc_wrong_denominator")


def test_show_with_an_explicit_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = tmp_path / "run.json"
    head.write_text((FIXTURE / "head.json").read_text())
    assert cli(["show", str(head), "shop-ads-cpc-by-region-q4", "--base", str(FIXTURE / "base.json")]) == 0
    out = capsys.readouterr().out
    assert "prediction, base → head:" in out and "regressed: passed on base" in out


def test_show_an_unknown_id_exits_2_with_the_closest(
    check_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["show", str(check_dir / "head.json"), "shop-traffic-dau-id-no"]) == 2
    err = capsys.readouterr().err
    assert "no case 'shop-traffic-dau-id-no'" in err and "closest: shop-traffic-dau-id-nov" in err


# --- the repair prompt ----------------------------------------------------------------------------------------


def test_the_repair_prompt_gets_the_cause_and_the_kb_diff(two_causes: Comparison, tmp_path: Path) -> None:
    head = read_run(FIXTURE / "head.json")
    result = next(c for c in head.cases if c.id == "shop-traffic-dau-id-nov")
    kb = KBFiles(root=tmp_path, globs=("kb/**/*.yaml",))
    ctx = failure_context(result, None, kb, comparison=two_causes)
    assert ctx.causes == (f"{SUITE}/kb/metrics/dau.yaml line 9",)
    assert "-  - tz_type = 'local'" in ctx.kb_diff and ctx.explained is True
    assert ctx.base_prediction and "tz_type = 'local'" in ctx.base_prediction
    assert ctx.first_difference == result.verdicts["execution"].message
    user = case_messages(ctx, globs=kb.globs, files=[], feedback=[], secrets=())[1]["content"]
    assert "## What changed since the base commit" in user
    assert "The change edited KB lines this answer used" in user and "+filters: []" in user
    plain = failure_context(result, None, kb)
    assert (
        plain.causes == ()
        and "What changed"
        not in case_messages(plain, globs=kb.globs, files=[], feedback=[], secrets=())[1]["content"]
    )


def test_file_diff_models_round_trip() -> None:
    files = parse_diff(DIFF)
    assert tuple(FileDiff.model_validate_json(f.model_dump_json()) for f in files) == files


def test_the_repair_prompt_shows_its_example_on_the_changed_line(
    two_causes: Comparison, tmp_path: Path
) -> None:
    """A small model copies the example it is shown: built from the line the PR changed and this answer used,
    the example is an edit that applies (the trial's model copied `kb/metrics/example.yaml` 14 times)."""
    shutil.copytree(REPO / SUITE / "kb", tmp_path / "kb")
    dau = tmp_path / "kb/metrics/dau.yaml"
    dau.write_text(dau.read_text().replace("filters:\n  - tz_type = 'local'\n", "filters: []\n"))
    head = read_run(FIXTURE / "head.json")
    result = next(c for c in head.cases if c.id == "shop-traffic-dau-id-nov")
    kb = KBFiles(root=tmp_path, globs=("kb/**/*.yaml",))
    ctx = failure_context(result, None, kb, comparison=two_causes)
    assert ctx.example == ("kb/metrics/dau.yaml", 9, "filters: []")
    user = case_messages(ctx, globs=kb.globs, files=[], feedback=[], secrets=())[1]["content"]
    assert (
        'to change line 9 of `kb/metrics/dau.yaml`:\n{"file": "kb/metrics/dau.yaml", "edits": [{"search": '
        '"filters: []", "replace": "<the corrected line>"}]}' in user
    )
    # without a check, the first line the answer cited
    plain = failure_context(result, None, kb)
    assert plain.example == (
        "kb/dimensions.yaml",
        8,
        (tmp_path / "kb/dimensions.yaml").read_text().splitlines()[7],
    )
    system = case_messages(plain, globs=kb.globs, files=[], feedback=[], secrets=())[0]["content"]
    assert "example.yaml" not in system and "<a KB file shown below>" in system
