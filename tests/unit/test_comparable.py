"""bot.compare.comparable and the edges of bot.compare.comparison that no other unit test held (found by
benchmarks/mutation): the words of each incomparability reason, how a case selection is described, and the head's
answers to edited cases judged by the base's version."""

from __future__ import annotations

from pathlib import Path

from bot.base.results import CaseResult, RunResult, read_run
from bot.compare.comparable import describe_selection, incomparable_reasons, run_warnings, selection
from bot.compare.comparison import compare_head_only, compare_runs

RUN = read_run(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "k1_base.json")


def with_meta(run: RunResult = RUN, **update) -> RunResult:
    return run.model_copy(update={"meta": run.meta.model_copy(update=update)})


def test_incomparable_reasons_word_for_word() -> None:
    base = with_meta(fixtures={"b": "1", "a": "2"}, evaluator_version="2")
    head = with_meta(fixtures={"d": "3", "c": "4"}, evaluator_version="3").model_copy(
        update={"schema_version": 9}
    )
    assert incomparable_reasons(base, head) == [
        f"RunResult schema version {base.schema_version} in base, 9 in head: written by different sqlcanary versions",
        "no database in common (base: a, b; head: c, d): the runs use different data",
        "evaluator version 2 in base, 3 in head: the scoring rules changed, so a verdict may differ without any "
        "change in the answer",
    ]
    before, after = with_meta(fixtures={"b": "1", "a": "2"}), with_meta(fixtures={"a": "2", "b": "X"})
    assert incomparable_reasons(before, after) == [
        "database `b`: fixture fingerprint 1 in base, X in head: the data changed, so gold answers may differ"
    ]


def test_selections_are_described_in_the_flags_that_make_them() -> None:
    assert describe_selection(RUN.meta.model_copy(update={"filters": {}, "shard": None})) == "the whole suite"
    meta = RUN.meta.model_copy(
        update={
            "filters": {"a_empty": [], "tags": ["ads", "kpi"], "category": "hard", "dbs": ["x", "y"]},
            "shard": "1/3",
        }
    )
    assert describe_selection(meta) == "category=hard dbs=x,y --tags ads,kpi shard 1/3"
    six = RUN.meta.model_copy(update={"filters": {"ids": [f"c{i}" for i in range(6)]}, "shard": None})
    assert describe_selection(six) == "--id c0 --id c1 --id c2 --id c3 --id c4 and 1 more"
    five = RUN.meta.model_copy(update={"filters": {"ids": [f"c{i}" for i in range(5)]}, "shard": None})
    assert describe_selection(five) == "--id c0 --id c1 --id c2 --id c3 --id c4"


def test_selection_compares_filter_values_whole() -> None:
    def sel(**filters) -> tuple:
        return selection(RUN.meta.model_copy(update={"filters": filters, "shard": None}))

    assert sel(tags=["b", "a"]) == sel(tags=["a", "b"])  # a list's order does not matter
    assert sel(category="ab") != sel(category="ba")  # a single value is not a list of characters
    assert sel(tags=[]) == sel()


def test_warning_for_an_incomplete_base() -> None:
    assert run_warnings(with_meta(complete=False), RUN) == [
        "the base run is incomplete: cases it did not reach count as new"
    ]


def test_head_only_warns_about_an_incomplete_head() -> None:
    assert compare_head_only(with_meta(complete=False)).warnings == (
        "the head run is incomplete: cases it did not reach are missing",
    )
    assert compare_head_only(RUN).warnings == ()


def test_compare_runs_judges_edited_cases_by_the_base_version_too() -> None:
    case = CaseResult(id="e", status="passed", category="c", case_hash="h1")
    base = RUN.model_copy(update={"cases": (case,)})
    head = RUN.model_copy(update={"cases": (case.model_copy(update={"case_hash": "h2"}),)})
    judged = compare_runs(base, head, edited_against_base={"e": "failed"})
    assert judged.verdict == "regressions" and judged.cases[0].against_base == "failed"
    assert judged.reasons[0].startswith("1 edited case(s) passed on base, and the head's answer fails")
    assert compare_runs(base, head).verdict == "pass"


def test_runs_checked_on_different_numbers_of_perturbed_copies_are_not_comparable() -> None:
    reason = (
        "perturbed copies: 0 in base, 3 in head (`--perturb`): a pass on more copies is a stricter verdict"
    )
    assert incomparable_reasons(with_meta(perturb=None), with_meta(perturb=3)) == [reason]
    assert incomparable_reasons(with_meta(perturb=3), with_meta(perturb=None)) == [
        reason.replace("0 in base, 3 in head", "3 in base, 0 in head")
    ]
    assert incomparable_reasons(with_meta(perturb=0), with_meta(perturb=None)) == []
    assert incomparable_reasons(with_meta(perturb=2), with_meta(perturb=2)) == []
