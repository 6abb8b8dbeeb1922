"""The change hints of the repair prompt (bot.repair.changehints) on the shop's planted regressions: a removed
line or block is shown as the text to insert after a line that exists now, with an edit that puts it back; lines
changed together (a swap) are shown together, as they are and as they were. The hunks come from real `git diff`
output; each example edit is applied as the repair loop applies a plan (bot.repair.actions.apply_action)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from bot.cases.loader import load_suite
from bot.compare.comparison import CaseChange, Comparison
from bot.compare.diff import Cause, Hunk, parse_diff
from bot.config.model import Config, KBConfig
from bot.kb.files import KBFiles
from bot.repair.actions import Action, apply_action
from bot.repair.changehints import change_hints, hint
from bot.repair.context import failure_context
from bot.repair.plan import NOT_THERE, check_plan, parse_plan
from bot.repair.prompts import case_messages
from tests.unit.test_repair_context import _case, _failed

SHOP = Path(__file__).resolve().parents[2] / "benchmarks" / "shop"
REGRESSIONS = SHOP / "regressions"


def planted(name: str) -> tuple[str, str, str]:
    """(KB file, base text, head text) of a one-file planted regression."""
    [edit] = yaml.safe_load((REGRESSIONS / f"{name}.yml").read_text())["edits"]
    base = (SHOP / edit["file"]).read_text()
    return edit["file"], base, base.replace(edit["search"], edit["replace"])


def hunks(tmp_path: Path, base: str, head: str) -> tuple[Hunk, ...]:
    (tmp_path / "base").write_text(base)
    (tmp_path / "head").write_text(head)
    out = subprocess.run(
        ["git", "diff", "--no-index", "--unified=0", "--no-renames", "base", "head"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    [diff] = parse_diff(out)
    return diff.hunks


def applied(rel: str, text: str, example: str) -> str:
    action = json.loads(example)
    assert action["file"] == rel
    return apply_action(Action.model_validate(action), rel, text)


@pytest.mark.parametrize("name", ["weekend_filter_removed", "snippet_missing_status_filter"])
def test_removed_lines_are_shown_as_an_insertion_after_a_line_that_exists(tmp_path: Path, name: str):
    rel, base, head = planted(name)
    [h] = hunks(tmp_path, base, head)
    found = hint(rel, h, head)
    assert found is not None and found.kind == "removed" and found.anchor is not None
    number, anchor = found.anchor
    assert head.splitlines()[number - 1] == anchor and head.count(anchor) == 1  # a line that is there
    assert all(line not in head.splitlines() for line in found.base)  # the removed lines are not
    assert json.loads(found.example)["edits"][0]["search"] == anchor
    assert applied(rel, head, found.example) == base  # the example puts them back where they were


def test_lines_removed_at_the_top_of_a_file_go_before_its_first_line(tmp_path: Path):
    base, head = "name: x\naggregation: sum\ntable: t\n", "aggregation: sum\ntable: t\n"
    [h] = hunks(tmp_path, base, head)
    found = hint("kb/metrics/x.yaml", h, head)
    assert found is not None and not found.after and found.anchor == (1, "aggregation: sum")
    assert applied("kb/metrics/x.yaml", head, found.example) == base


def test_swapped_values_are_shown_as_both_lines_to_edit_together(tmp_path: Path):
    rel, base, head = planted("ctr_ratio_swapped")
    [h] = hunks(tmp_path, base, head)
    found = hint(rel, h, head)
    assert found is not None and found.kind == "block" and found.swapped
    assert found.head == ("numerator: impressions", "denominator: clicks")
    assert found.base == ("numerator: clicks", "denominator: impressions")
    search = json.loads(found.example)["edits"][0]["search"]
    assert search == "numerator: impressions\ndenominator: clicks" and head.count(search) == 1
    assert applied(rel, head, found.example) == base  # the values moved back


def test_one_changed_line_needs_no_hint_and_other_blocks_are_not_swaps(tmp_path: Path):
    rel, base, head = planted("cpc_wrong_denominator")
    [h] = hunks(tmp_path, base, head)
    assert hint(rel, h, head) is None
    base2, head2 = "a: 1\nb: 2\n", "a: 3\nb: 4\n"
    [h2] = hunks(tmp_path, base2, head2)
    found = hint("kb/x.yaml", h2, head2)
    assert found is not None and found.kind == "block" and not found.swapped
    assert "<the corrected lines>" in found.example  # a new value is the model's to write


def test_hints_name_kb_files_and_skip_what_cannot_be_read(tmp_path: Path):
    rel, base, head = planted("weekend_filter_removed")
    [h] = hunks(tmp_path, base, head)
    texts = {f"benchmarks/shop/{rel}": (rel, head)}
    found = change_hints([(f"benchmarks/shop/{rel}", [h]), ("elsewhere/x.yaml", [h])], texts.get)
    assert [c.file for c in found] == [rel]


@pytest.fixture
def kb(tmp_path: Path) -> KBFiles:
    root = tmp_path / "repo"
    (root / "kb").mkdir(parents=True)
    config = Config(base_dir=str(root), kb=KBConfig(paths=("kb/**/*.yaml", "kb/**/*.sql")))
    return KBFiles.from_config(config)


def test_the_prompt_shows_the_insertion_and_makes_it_the_reply_example(tmp_path: Path, kb: KBFiles):
    rel, base, head = planted("weekend_filter_removed")
    (kb.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (kb.root / rel).write_text(head)
    [h] = hunks(tmp_path, base, head)
    case = _case(load_suite(SHOP), "shop-traffic-dau-weekend-th-nov")
    ctx = failure_context(_failed(case, "SELECT avg(dau) FROM daily_platform_activity"), case, kb)
    ctx = dataclasses.replace(ctx, changes=(hint(rel, h, head),))
    [_, user] = case_messages(ctx, globs=kb.globs, files=[], feedback=[], secrets=[])
    text = user["content"]
    assert "no\n`search` can find them" in text or "no `search` can find them" in text
    assert "- name: weekends\n    synonyms: [weekend, weekends]" in text  # the base's lines, to insert
    reply = text[text.index("## Your reply") :]
    assert "to insert the removed lines" in reply and '"search": "day_filters:"' in reply


def test_a_search_for_lines_that_are_not_there_is_told_how_to_insert(kb: KBFiles):
    (kb.root / "kb" / "x.yaml").write_text("name: x\nfilters:\n  - a = 1\n")
    data = {
        "status": "updated",
        "issues_found": ["the b filter was removed"],
        "improvements_made": ["b is back"],
        "actions": [{"file": "kb/x.yaml", "edits": [{"search": "  - b = 2", "replace": "  - b = 2"}]}],
    }
    checked = check_plan(parse_plan(data), kb)
    assert not checked.ok
    assert NOT_THERE in str(checked.refusals[0])


def test_from_a_check_the_context_holds_the_hints_and_the_fixes_to_keep(tmp_path: Path, kb: KBFiles):
    """Through failure_context with a check's comparison: the cause's repository path (the suite in a
    subfolder) is found in the KB, and the case the same change fixed is named as one to keep."""
    rel, base, head = planted("weekend_filter_removed")
    (kb.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (kb.root / rel).write_text(head)
    [h] = hunks(tmp_path, base, head)
    case = _case(load_suite(SHOP), "shop-traffic-dau-weekend-th-nov")
    comparison = Comparison.model_construct(
        cases=(
            CaseChange(id=case.id, transition="regressed", question=case.question),
            CaseChange(id="shop-x", transition="fixed", question="GMV in Viet Nam"),
            CaseChange(id="shop-y", transition="still_passing"),
        ),
        causes=(Cause(file=f"benchmarks/shop/{rel}", hunks=(h,), cases=(case.id,)),),
        linked=True,
    )
    result = _failed(case, "SELECT avg(dau) FROM daily_platform_activity", used=(f"{rel}:70-72",))
    ctx = failure_context(result, case, kb, comparison=comparison)
    assert [(c.file, c.kind) for c in ctx.changes] == [(rel, "removed")]
    assert ctx.also_fixed == ("`shop-x` (GMV in Viet Nam)",)
    [_, user] = case_messages(ctx, globs=kb.globs, files=[], feedback=[], secrets=[])
    assert "also fixed `shop-x` (GMV in Viet Nam), which failed on the base" in user["content"]
    assert "to insert the removed lines" in user["content"]


def test_a_changed_file_the_answer_no_longer_cites_is_shown(tmp_path: Path, kb: KBFiles):
    """The mixed hunk: with `Vietnam` gone, the head's answer cites only the orders metric, yet the linked
    change is in dimensions.yaml: its changed line is shown, numbered, beside the cited file."""
    rel, base, head = planted("vietnam_alias_renamed")
    for name in (rel, "kb/metrics/orders.yaml"):
        (kb.root / name).parent.mkdir(parents=True, exist_ok=True)
        (kb.root / name).write_text(head if name == rel else (SHOP / name).read_text())
    [h] = hunks(tmp_path, base, head)
    case = _case(load_suite(SHOP), "shop-commerce-orders-vn-oct")
    comparison = Comparison.model_construct(
        cases=(
            CaseChange(id=case.id, transition="regressed"),
            CaseChange(id="shop-market-gmv-viet-nam-dec", transition="fixed"),
        ),
        causes=(Cause(file=rel, hunks=(h,), cases=(case.id,)),),
        linked=True,
    )
    result = _failed(case, "SELECT count(order_id) FROM orders", used=("kb/metrics/orders.yaml:1-11",))
    ctx = failure_context(result, case, kb, comparison=comparison)
    by_file = {e.file: e for e in ctx.excerpts}
    assert set(by_file) == {"kb/metrics/orders.yaml", rel}
    assert ">" in by_file[rel].text and "aliases: [Viet Nam]" in by_file[rel].text
    assert ctx.also_fixed == ("`shop-market-gmv-viet-nam-dec`",)
    assert ctx.example is not None and ctx.example[2].strip() == "aliases: [Viet Nam]"  # the changed line
