"""Plan parsing and validation of the repair loop against a copy of the shop KB (no database)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bot.config.model import Config, KBConfig
from bot.kb.files import KBFiles
from bot.repair.plan import PlanError, check_plan, combine_held, kb_folders, parse_plan

SHOP = Path(__file__).resolve().parents[2] / "benchmarks" / "shop"
GLOBS = ("kb/**/*.yaml", "kb/**/*.yml", "kb/**/*.sql", "kb/**/*.md")


@pytest.fixture
def kb(tmp_path: Path) -> KBFiles:
    shutil.copytree(SHOP / "kb", tmp_path / "kb")
    (tmp_path / "agent.py").write_text("x = 1\n")
    return KBFiles.from_config(Config(base_dir=str(tmp_path), kb=KBConfig(paths=GLOBS)))


def plan(*actions: dict, status: str = "updated", **extra) -> dict:
    return {
        "status": status,
        "issues_found": ["i"],
        "improvements_made": ["m"],
        "actions": list(actions),
        "reasoning": "r",
        **extra,
    }


def edit(file: str, search: str, replace: str, kind: str | None = None) -> dict:
    action = {"file": file, "edits": [{"search": search, "replace": replace}]}
    return {"type": kind, **action} if kind else action


def refusals(kb: KBFiles, data: dict) -> str:
    checked = check_plan(parse_plan(data), kb)
    assert not checked.ok and not checked.changes
    return " | ".join(str(r) for r in checked.refusals)


def test_a_good_edit_yields_the_new_text(kb: KBFiles):
    checked = check_plan(
        parse_plan(
            plan(edit("kb/metrics/cpc.yaml", "denominator: clicks", "denominator: clicks  # per click"))
        ),
        kb,
    )
    assert checked.ok, checked.refusals
    assert "denominator: clicks  # per click" in checked.changes["kb/metrics/cpc.yaml"]
    assert checked.originals["kb/metrics/cpc.yaml"] == (kb.root / "kb/metrics/cpc.yaml").read_text()


def test_parse_reports_ignored_keys_and_rejects_bad_shapes():
    p = parse_plan({**plan(), "confidence": 0.9, "actions": [{**edit("kb/a.yaml", "a", "b"), "why": "x"}]})
    assert p.ignored_keys == ("confidence", "actions[0].why")
    typed = parse_plan(plan(edit("kb/a.yaml", "a", "b", "edit_snippet")))
    assert typed.ignored_keys == ("actions[0].type",)  # the file says what kind it is, never the model
    for bad, where in [
        ([], "one JSON object"),
        ({"actions": []}, "status"),
        (plan(status="done"), "status"),
        (plan({"type": "edit_metric"}), "actions.0.file"),
    ]:
        with pytest.raises(PlanError, match=where):
            parse_plan(bad)


def test_search_text_must_occur_exactly_once(kb: KBFiles):
    assert "not found" in refusals(kb, plan(edit("kb/metrics/cpc.yaml", "denominator: views", "x")))
    twice = refusals(kb, plan(edit("kb/metrics/dau.yaml", "a", "b")))
    assert "times (must be exactly once)" in twice
    assert "empty" in refusals(kb, plan(edit("kb/metrics/dau.yaml", "", "b")))


def _sent_action(reason: str, after: str) -> dict:
    """The corrected action a refusal shows, as the model would paste it."""
    tail = reason[reason.index(after) + len(after) :]
    return json.loads(tail[tail.index("{") : tail.rindex("}") + 1])


def test_a_search_text_not_in_the_file_is_refused_with_the_search_to_send(kb: KBFiles):
    """A small model edits what it remembers, not what the file says: the refusal quotes the closest line of
    the file, and the action it shows applies as is."""
    wrong = edit("kb/metrics/cpc.yaml", "denominator:  impression", "denominator: clicks  # per click")
    reason = refusals(kb, plan(wrong))
    assert "'denominator: clicks' (line 6)" in reason
    fixed = _sent_action(reason, "send ")
    assert fixed == {
        "file": "kb/metrics/cpc.yaml",
        "edits": [{"search": "denominator: clicks", "replace": "denominator: clicks  # per click"}],
    }
    assert check_plan(parse_plan(plan(fixed)), kb).ok


def test_an_edit_written_the_wrong_way_round_applies_from_the_replace_text(kb: KBFiles):
    """The model copies a diff's - and + lines in order: search is the old line (gone), replace the line the
    file has. Applied the other way round, it is the revert the case needs (and still verified)."""
    checked = check_plan(
        parse_plan(plan(edit("kb/metrics/cpc.yaml", "denominator: impressions", "denominator: clicks"))), kb
    )
    assert checked.ok, checked.refusals
    assert "denominator: impressions" in checked.changes["kb/metrics/cpc.yaml"]
    assert "denominator: clicks" not in checked.changes["kb/metrics/cpc.yaml"]


def test_a_search_text_matches_whole_words_only(kb: KBFiles):
    """`orders` inside `orders_archive` is not the text meant: the trial wrote `orders_archive_archive`."""
    gmv = kb.root / "kb/metrics/gmv.yaml"
    gmv.write_text(gmv.read_text().replace("table: orders\n", "table: orders_archive\n"))
    reason = refusals(kb, plan(edit("kb/metrics/gmv.yaml", "table: orders_arch", "table: orders")))
    assert "not found" in reason
    checked = check_plan(
        parse_plan(plan(edit("kb/metrics/gmv.yaml", "table: orders", "table: orders_archive"))), kb
    )
    assert checked.ok, checked.refusals  # not found as a word, so applied from the replace text back
    assert "table: orders\n" in checked.changes["kb/metrics/gmv.yaml"]
    assert "orders_archive" not in checked.changes["kb/metrics/gmv.yaml"]


def test_a_search_text_with_other_whitespace_still_applies_once(kb: KBFiles):
    flat = edit(
        "kb/metrics/gmv.yaml",
        "filters: - status = 'completed'",
        "filters:\n  - status = 'completed'\n  - gmv > 0",
    )
    checked = check_plan(parse_plan(plan(flat)), kb)
    assert checked.ok, checked.refusals
    assert "  - status = 'completed'\n  - gmv > 0\n" in checked.changes["kb/metrics/gmv.yaml"]
    indented = edit(
        "kb/metrics/gmv.yaml", "    - status  =  'completed'\n", "  - status = 'completed'\n  - gmv > 0\n"
    )
    again = check_plan(parse_plan(plan(indented)), kb)
    assert again.ok and again.changes == checked.changes


def test_two_halves_of_one_cross_file_rule_are_tried_together(kb: KBFiles):
    """The ratio `aov` needs `gmv` and `orders` on one source: each edit alone is refused by the KB validator
    (held, never written); the two together are one plan the validator accepts."""
    gmv = check_plan(
        parse_plan(plan(edit("kb/metrics/gmv.yaml", "table: orders\n", "table: orders_archive\n"))), kb
    )
    orders = check_plan(
        parse_plan(plan(edit("kb/metrics/orders.yaml", "table: orders\n", "table: orders_archive\n"))), kb
    )
    for half in (gmv, orders):
        assert not half.ok and not half.changes and "share a source" in str(half.refusals[0]) and half.held
    both = combine_held(kb, gmv, orders)
    assert both is not None and both.ok
    assert set(both.changes) == {"kb/metrics/gmv.yaml", "kb/metrics/orders.yaml"}
    assert combine_held(kb, gmv, gmv) is None  # the same file twice: not two halves
    (kb.root / "kb/metrics/gmv.yaml").write_text((kb.root / "kb/metrics/gmv.yaml").read_text() + "# edited\n")
    assert combine_held(kb, gmv, orders) is None  # the earlier half no longer matches the file


@pytest.mark.parametrize(
    "action",
    [
        edit("kb/metrics/gmv.yaml", "<exact lines copied from the file>", "x"),
        edit("kb/metrics/gmv.yaml", "lines copied exactly from the file", "the new lines"),
        edit("kb/metrics/gmv.yaml", "  - status = 'completed'", "<the new text>"),
        {"file": "kb/metrics/new.yaml", "content": "<the whole new YAML file>"},
    ],
)
def test_placeholders_from_the_examples_are_refused(kb: KBFiles, action: dict):
    assert "placeholder" in refusals(kb, plan(action))


def test_a_repeated_search_text_is_refused_with_a_wider_one_that_applies(kb: KBFiles):
    assert refusals(kb, plan(edit("kb/metrics/cpc.yaml", "per click", "per paid click"))).count("times") == 1
    reason = refusals(kb, plan(edit("kb/metrics/cpc.yaml", "per click", "per paid click")))
    fixed = _sent_action(reason, "occurs once: ")
    assert fixed["edits"][0]["search"].count("\n") == 1 and "per paid click" in fixed["edits"][0]["replace"]
    checked = check_plan(parse_plan(plan(fixed)), kb)
    assert checked.ok and "Cost per paid click" in checked.changes["kb/metrics/cpc.yaml"]


def test_broken_yaml_is_refused(kb: KBFiles):
    reason = refusals(kb, plan(edit("kb/metrics/cpc.yaml", "denominator: clicks", "denominator: [clicks")))
    assert "YAML does not parse" in reason


def test_kb_validator_errors_are_refused(kb: KBFiles):
    reason = refusals(kb, plan(edit("kb/metrics/cpc.yaml", "denominator: clicks", "denominator: nonsense")))
    assert "KB validator" in reason and "nonsense" in reason
    unknown = refusals(
        kb, plan(edit("kb/metrics/cpc.yaml", "denominator: clicks", "denominator: clicks\nbogus_key: 1"))
    )
    assert "bogus_key" in unknown


def test_sql_snippet_that_does_not_parse_is_refused(kb: KBFiles):
    bad = {"type": "create_snippet", "file": "kb/snippets/new_one.sql", "content": "SELECT FROM WHERE (("}
    assert "does not parse" in refusals(kb, plan(bad))
    good = {"type": "create_snippet", "file": "kb/snippets/new_one.sql", "content": "SELECT 1 AS x\n"}
    assert check_plan(parse_plan(plan(good)), kb).ok


def test_a_mismatched_kind_is_applied_as_the_files_kind(kb: KBFiles):
    """The trial's model sent `edit_snippet` for a .yaml file ten times: the kind now follows from the file."""
    yaml_as_snippet = edit(
        "kb/metrics/cpc.yaml", "denominator: clicks", "denominator: clicks  # ok", "edit_snippet"
    )
    checked = check_plan(parse_plan(plan(yaml_as_snippet)), kb)
    assert checked.ok, checked.refusals
    assert "denominator: clicks  # ok" in checked.changes["kb/metrics/cpc.yaml"]
    sql_as_metric = {"type": "create_metric", "file": "kb/snippets/new_one.sql", "content": "SELECT 1 AS x\n"}
    assert check_plan(parse_plan(plan(sql_as_metric)), kb).changes == {
        "kb/snippets/new_one.sql": "SELECT 1 AS x\n"
    }
    # ... and validated as that kind: a .yaml file must still be YAML the KB validator accepts
    reason = refusals(
        kb,
        plan(
            {
                **yaml_as_snippet,
                "edits": [{"search": "denominator: clicks", "replace": "denominator: [clicks"}],
            }
        ),
    )
    assert "YAML does not parse" in reason


def test_content_writes_the_whole_file_and_wrong_shapes_say_what_to_send(kb: KBFiles):
    text = (kb.root / "kb/metrics/cpc.yaml").read_text().replace("USD", "US dollars")
    whole = check_plan(parse_plan(plan({"file": "kb/metrics/cpc.yaml", "content": text})), kb)
    assert whole.ok and whole.changes == {"kb/metrics/cpc.yaml": text}
    missing = refusals(kb, plan(edit("kb/metrics/nope.yaml", "a", "b")))
    assert "does not exist" in missing and '{"file": "kb/metrics/nope.yaml", "content": ' in missing
    both = refusals(kb, plan({**edit("kb/metrics/cpc.yaml", "a", "b"), "content": "x"}))
    assert "not both" in both and '"edits": [' in both and '"content": ' in both
    neither = refusals(kb, plan({"file": "kb/metrics/cpc.yaml"}))
    assert "neither `edits` nor `content`" in neither


def test_the_schema_sent_allows_only_edits_or_content():
    from bot.repair.plan import PLAN_SCHEMA

    shapes = PLAN_SCHEMA["properties"]["actions"]["items"]["anyOf"]
    assert [sorted(s["required"]) for s in shapes] == [["edits", "file"], ["content", "file"]]
    assert all(s["additionalProperties"] is False and "type" not in s["properties"] for s in shapes)


@pytest.mark.parametrize(
    "path", ["../../.github/workflows/x.yml", "/etc/passwd", "agent.py", ".github/x.yml", "kb/../agent.py"]
)
def test_hostile_paths_refuse_the_whole_plan(kb: KBFiles, path: str):
    good = edit("kb/metrics/cpc.yaml", "denominator: clicks", "denominator: clicks  # ok")
    hostile = {"type": "create_metric", "file": path, "content": "name: x\n"}
    reason = refusals(kb, plan(good, hostile))
    assert "actions[1]" in reason and "actions[0]" not in reason


def test_updated_without_actions_and_no_op_edits_are_refused(kb: KBFiles):
    assert "no actions" in refusals(kb, plan())
    assert "change nothing" in refusals(kb, plan(edit("kb/metrics/cpc.yaml", "clicks", "clicks")))


def test_actions_on_one_file_chain(kb: KBFiles):
    first = edit("kb/metrics/cpc.yaml", "denominator: clicks", "denominator: clicks  # A")
    second = edit("kb/metrics/cpc.yaml", "# A", "# B")
    checked = check_plan(parse_plan(plan(first, second)), kb)
    assert checked.ok and "# B" in checked.changes["kb/metrics/cpc.yaml"]


def test_kb_folders_from_globs(kb: KBFiles):
    assert kb_folders(kb) == ("kb",)
    assert kb_folders(KBFiles(root=kb.root, globs=("docs/kb/*.md", "*.yaml"))) == ("docs/kb", "")


def test_failure_context_shows_only_the_used_lines_and_never_outside_the_kb(kb: KBFiles):
    from bot.repair.context import excerpts

    used = (
        "kb/metrics/cpc.yaml:2-3",
        "../../etc/passwd:1-3",
        "agent.py:1-1",
        "kb/metrics/cpc.yaml:3-4",
        "junk",
    )
    shown, skipped, _ = excerpts(kb, used)
    (ex,) = shown
    assert ex.file == "kb/metrics/cpc.yaml" and ex.ranges == ((2, 4),)
    lines = (kb.root / "kb/metrics/cpc.yaml").read_text().splitlines()
    assert len(ex.text.splitlines()) == min(len(lines), 4 + 3)  # lines 1..7 at most: used 2-4, 3 around
    assert re.search(r"^> +2 \|", ex.text, re.M) and re.search(r"^  +1 \|", ex.text, re.M)
    assert set(skipped) == {"../../etc/passwd", "agent.py", "junk"}
