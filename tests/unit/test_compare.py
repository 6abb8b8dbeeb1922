"""compare_runs and `sqlcanary compare` on saved RunResults (tests/fixtures/runs/, built by make_runs.py there)."""

from __future__ import annotations

import importlib.util
import json
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from bot.base.errors import ConfigError, ResultFileError
from bot.base.results import Attempt, Counts, read_run, write_run
from bot.base.stats import binomial_tail, discordant_pairs, mcnemar_one_sided, mcnemar_two_sided
from bot.cli import main as cli_main
from bot.commands.common import add_gate_arguments, fraction, gate_from_args
from bot.compare.comparison import (
    NO_BASELINE,
    TRANSITIONS,
    CaseChange,
    Comparison,
    GateSettings,
    classify_case,
    compare_head_only,
    compare_runs,
    gate_reasons,
    rate_delta,
)
from bot.report.compare_text import render_summary

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
# k1 also holds a removed case and a case that passed and became invalid: tests of other rules let those through.
LENIENT = {"allow_removed": True, "allow_invalid": True}


def load(name: str):
    return read_run(RUNS / f"{name}.json")


def cmp(base: str, head: str, **kw) -> Comparison:
    return compare_runs(load(base), load(head), **kw)


def by_id(comparison: Comparison) -> dict[str, CaseChange]:
    return {c.id: c for c in comparison.cases}


def test_fixture_files_match_their_builder():
    spec = importlib.util.spec_from_file_location("make_runs", RUNS / "make_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, text in module.file_texts().items():
        on_disk = (RUNS / name).read_text(encoding="utf-8")
        assert on_disk == text, f"{name} is stale: run python tests/fixtures/runs/make_runs.py"


# --- stats -------------------------------------------------------------------------------------------------------


def _brute_tail(k: int, n: int, p: Fraction) -> Fraction:
    return sum((comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)), Fraction(0))


@pytest.mark.parametrize("n", range(0, 13))
def test_binomial_tail_equals_the_exact_sum(n):
    for k in range(-1, n + 2):
        assert binomial_tail(k, n) == pytest.approx(
            float(_brute_tail(max(k, 0), n, Fraction(1, 2))), abs=1e-15
        )
        assert binomial_tail(k, n, 0.3) == pytest.approx(float(_brute_tail(max(k, 0), n, Fraction(3, 10))))


def test_mcnemar_known_values():
    assert mcnemar_one_sided(0, 0) == 1.0  # nothing moved: no evidence
    assert mcnemar_one_sided(1, 0) == 0.5
    assert mcnemar_one_sided(3, 0) == 0.125
    assert mcnemar_one_sided(7, 0) == 1 / 128
    assert mcnemar_one_sided(8, 1) == 10 / 512
    assert mcnemar_one_sided(0, 5) == 1.0
    assert mcnemar_two_sided(7, 0) == mcnemar_two_sided(0, 7) == 2 / 128
    assert mcnemar_two_sided(2, 2) == 1.0
    with pytest.raises(ValueError):
        mcnemar_one_sided(-1, 2)


def test_discordant_pairs_pair_by_position():
    assert discordant_pairs([True, True, False], [True, False, True]) == (1, 1)
    assert discordant_pairs([True] * 3, [False] * 3) == (3, 0)
    assert discordant_pairs([True], [False, False, False]) == (1, 0)  # the extra attempts stay unpaired


# --- transitions at K=1 ------------------------------------------------------------------------------------------

K1_EXPECTED = {
    "still-pass": "still_passing",
    "regressed": "regressed",
    "fixed": "fixed",
    "still-fail": "still_failing",
    "error-changed": "error_changed",
    "still-errored": "still_failing",
    "became-invalid": "became_invalid",
    "became-valid": "became_valid",
    "still-invalid": "still_failing",
    "removed": "removed",
    "new": "new",
}


def test_every_transition_kind_at_k1():
    c = cmp("k1_base", "k1_head")
    assert {i: ch.transition for i, ch in by_id(c).items()} == K1_EXPECTED
    assert c.counts == {t: list(K1_EXPECTED.values()).count(t) for t in TRANSITIONS}
    assert all(ch.p_value is None and not ch.flaky for ch in c.cases)


def test_cases_are_ordered_by_transition_then_id():
    ids = [ch.id for ch in cmp("k1_base", "k1_head").cases]
    assert ids == [
        "regressed",
        "fixed",
        "became-invalid",
        "error-changed",
        "new",
        "removed",
        "became-valid",
        "still-errored",
        "still-fail",
        "still-invalid",
        "still-pass",
    ]


def test_case_change_fields_come_from_the_case_results():
    changes = by_id(cmp("k1_base", "k1_head"))
    reg = changes["regressed"]
    assert (reg.base_status, reg.head_status) == ("passed", "failed")
    assert reg.reason.startswith("1 gold row(s) not matched")
    assert reg.structural == "filters differ: gold has `traffic.tz_type = 'local'`, prediction has none"
    assert reg.tags == ("traffic", "hard") and reg.category == "query"
    assert reg.question == "question of regressed" and reg.source == "cases/query.yml:1"
    assert "failed" in reg.head_sql and "passed" in reg.base_sql
    assert (reg.base_passes, reg.base_repeats, reg.head_passes, reg.head_repeats) == (1, 1, 0, 1)
    fixed = changes["fixed"]
    assert fixed.reason.startswith("base: ")  # a fix shows what was wrong before
    assert fixed.structural == ""  # the head passed: no structural diff to show
    err = changes["error-changed"]
    assert (err.base_error_class, err.head_error_class) == (None, "agent_timeout")
    assert err.reason == "agent: timed out"
    assert changes["new"].base_status is None and changes["new"].base_repeats == 0
    assert changes["removed"].head_status is None and changes["removed"].head_sql is None
    assert changes["became-invalid"].reason == "gold: syntax error"


def test_classify_case_needs_a_side():
    with pytest.raises(ValueError):
        classify_case(None, None)


def test_a_run_holding_a_case_twice_is_refused():
    base = load("k1_base")
    doubled = base.model_copy(update={"cases": base.cases + base.cases[:1]})
    with pytest.raises(ResultFileError, match="twice"):
        compare_runs(doubled, load("k1_head"))


def test_a_run_file_past_the_bound_or_not_utf8_is_refused_naming_it(tmp_path: Path):
    run = tmp_path / "head.json"
    write_run(run, load("k1_head"))
    assert read_run(run).cases  # within the bound
    with pytest.raises(ResultFileError, match="larger than 100 bytes") as exc:
        read_run(run, limit=100)
    assert exc.value.path == str(run)
    run.write_bytes(b'{"schema_version": "\xff"}')
    with pytest.raises(ResultFileError, match="not UTF-8"):
        read_run(run)


# --- repeats and McNemar -----------------------------------------------------------------------------------------


def test_flaky_right_on_two_of_three_is_flaky_not_a_regression():
    c = cmp("k3_base", "k3_head")
    changes = by_id(c)
    assert changes["flaky-2of3"].transition == "flaky"
    assert changes["flaky-2of3"].flaky and changes["flaky-2of3"].p_value == 0.5
    assert (changes["flaky-2of3"].head_passes, changes["flaky-2of3"].head_repeats) == (2, 3)
    assert changes["flaky-both"].transition == "flaky"
    assert changes["flaky-up"].transition == "flaky"  # 0/3 -> 1/3 is not a fix either
    assert changes["flaky-2of3"].reason.startswith("attempt 2:")  # the failing attempt says what went wrong
    assert c.verdict == "regressions"  # because of break-k3 only
    assert [ch.id for ch in c.of("regressed")] == ["break-k3"]


def test_deterministic_break_is_a_regression_at_k1_and_k3():
    assert by_id(cmp("k1_base", "k1_head"))["regressed"].transition == "regressed"
    k3 = by_id(cmp("k3_base", "k3_head"))
    assert k3["break-k3"].transition == "regressed"
    assert k3["break-k3"].p_value == 0.125 and not k3["break-k3"].flaky
    assert k3["fix-k3"].transition == "fixed"
    assert k3["steady-k3"].transition == "still_passing" and not k3["steady-k3"].flaky


def test_k10_nine_to_two_is_a_significant_regression():
    c = by_id(cmp("k10_base", "k10_head"))
    drop = c["drop-9-to-2"]
    assert drop.transition == "regressed" and drop.flaky
    assert drop.p_value == pytest.approx(1 / 128) and drop.p_value < 0.05
    assert (drop.base_passes, drop.head_passes, drop.head_repeats) == (9, 2, 10)
    assert c["wobble-9-to-7"].transition == "flaky" and c["wobble-9-to-7"].p_value == 0.25
    assert c["rise-2-to-9"].transition == "fixed" and c["rise-2-to-9"].p_value == pytest.approx(1 / 128)


def test_alpha_and_min_regression_count_decide_repeated_cases():
    loose = by_id(cmp("k3_base", "k3_head", gate=GateSettings(alpha=0.6)))
    assert loose["flaky-2of3"].transition == "regressed"  # p = 0.5 < 0.6, one attempt moved
    assert loose["flaky-up"].transition == "fixed"  # the mirror
    assert loose["flaky-both"].transition == "flaky"  # b - c = 0
    counted = by_id(cmp("k3_base", "k3_head", gate=GateSettings(alpha=0.6, min_regression_count=2)))
    assert counted["flaky-2of3"].transition == "flaky"
    strict = by_id(cmp("k10_base", "k10_head", gate=GateSettings(alpha=0.005)))
    assert strict["drop-9-to-2"].transition == "flaky"  # p = 0.0078 is not below 0.005
    many = by_id(cmp("k10_base", "k10_head", gate=GateSettings(min_regression_count=8)))
    assert many["drop-9-to-2"].transition == "flaky"  # only 7 attempts moved


def test_flaky_cases_never_fail_the_gate():
    base, head = load("k3_base"), load("k3_head")
    keep = {"flaky-2of3", "flaky-both", "flaky-up", "steady-k3"}
    only_flaky = compare_runs(
        base.model_copy(update={"cases": tuple(c for c in base.cases if c.id in keep)}),
        head.model_copy(update={"cases": tuple(c for c in head.cases if c.id in keep)}),
    )
    assert only_flaky.verdict == "pass" and only_flaky.counts["flaky"] == 3


def test_different_repeat_counts_pair_the_common_attempts_and_warn():
    k3 = load("k3_base")
    once = k3.model_copy(update={"meta": k3.meta.model_copy(update={"repeats": 1})})
    c = compare_runs(once, load("k3_head"))
    assert c.warnings == (
        "base repeated each case 1 time(s), head 3: only the first 1 attempt(s) are paired",
    )


# --- pass-rate deltas --------------------------------------------------------------------------------------------


def test_overall_tag_and_category_deltas():
    c = cmp("k1_base", "k1_head")
    assert (c.overall.base_rate, c.overall.head_rate) == (0.5, 0.375)
    assert c.overall.delta == pytest.approx(-0.125)
    assert c.overall.base.invalid == 2 and c.overall.head.total == 10
    traffic = c.by_tag["traffic"]
    assert (traffic.base_rate, traffic.head_rate, traffic.delta) == (1.0, 0.5, -0.5)
    assert c.by_tag["commerce"].delta == 0.5
    assert c.by_tag["legacy"].head_rate is None and c.by_tag["legacy"].delta is None  # only in base
    assert c.by_tag["fresh"].base.total == 0 and c.by_tag["fresh"].head_rate == 0.0  # only in head
    assert c.by_category["efficiency"].head_rate is None  # its only case became invalid
    assert c.by_category["management"].base_rate == 0.0
    assert set(c.by_category) == {"query", "personalization", "management", "efficiency"}
    assert list(c.by_tag) == sorted(c.by_tag)


# --- gate rules --------------------------------------------------------------------------------------------------


def test_gate_max_regressions():
    c = cmp("k1_base", "k1_head")
    assert c.verdict == "regressions"
    assert c.reasons == (
        "1 case(s) regressed, more than the 0 allowed: regressed",
        "1 case(s) passed on base and are invalid on head (the gold SQL or the fixture broke): became-invalid; "
        "set gate.allow_invalid: true (or --allow-invalid) to accept that",
        "1 case(s) removed, and a deleted case cannot fail: removed; "
        "set gate.allow_removed: true (or --allow-removed) to accept removals",
    )
    assert cmp("k1_base", "k1_head", gate=GateSettings(max_regressions=1, **LENIENT)).verdict == "pass"
    assert cmp("k1_base", "k1_head", gate=GateSettings(**LENIENT)).reasons == (c.reasons[0],)


@pytest.mark.parametrize(("floor", "verdict"), [(0.4, "regressions"), (0.375, "pass"), (0.3, "pass")])
def test_gate_min_pass_rate(floor, verdict):
    c = cmp("k1_base", "k1_head", gate=GateSettings(max_regressions=5, min_pass_rate=floor, **LENIENT))
    assert c.verdict == verdict
    if verdict == "regressions":
        assert c.reasons == ("head pass rate 37.5% is below the minimum 40.0%",)


@pytest.mark.parametrize(("drop", "verdict"), [(0.1, "regressions"), (0.125, "pass"), (0.2, "pass")])
def test_gate_max_pass_rate_drop(drop, verdict):
    c = cmp("k1_base", "k1_head", gate=GateSettings(max_regressions=5, max_pass_rate_drop=drop, **LENIENT))
    assert c.verdict == verdict
    if verdict == "regressions":
        assert c.reasons == ("pass rate dropped 12.5 points (50.0% → 37.5%), more than the 10.0 allowed",)


def test_gate_rates_are_not_fooled_by_float_rounding():
    overall = rate_delta(Counts(total=10, passed=8), Counts(total=10, passed=7))
    assert overall.base_rate - overall.head_rate > 0.1  # 0.10000000000000009 in floating point
    assert gate_reasons([], overall, GateSettings(max_pass_rate_drop=0.1)) == []
    assert gate_reasons([], overall, GateSettings(min_pass_rate=0.7)) == []
    assert len(gate_reasons([], overall, GateSettings(max_pass_rate_drop=0.09, min_pass_rate=0.71))) == 2


def test_gate_rules_add_up():
    c = cmp("k1_base", "k1_head", gate=GateSettings(min_pass_rate=0.9, max_pass_rate_drop=0.01))
    assert len(c.reasons) == 5 and c.gate.min_pass_rate == 0.9


def test_gate_min_pass_rate_without_a_decidable_case():
    head = load("k1_head")
    invalid_only = head.model_copy(update={"cases": tuple(c for c in head.cases if c.status == "invalid")})
    gate = GateSettings(max_regressions=99, min_pass_rate=0.5, **LENIENT)
    c = compare_runs(load("k1_base"), invalid_only, gate=gate)
    assert c.verdict == "regressions" and "no decidable case" in c.reasons[0]


def test_same_run_passes():
    c = cmp("k1_base", "k1_base", gate=GateSettings(min_pass_rate=0.5, max_pass_rate_drop=0))
    assert c.verdict == "pass" and c.reasons == () and c.overall.delta == 0


# --- incomparable ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "words"),
    [
        ("k1_head_evaluator2", "evaluator version 1 in base, 2 in head"),
        ("k1_head_preset_bird", "preset `sqlcanary` in base, `bird` in head"),
        (
            "k1_head_fixture_changed",
            "database `shop`: fixture fingerprint f1x7u4e0000000aa in base, f1x7u4e0000000bb in head",
        ),
    ],
)
def test_incomparable_runs_say_why_and_force_compares_anyway(head, words):
    c = cmp("k1_base", head)
    assert c.verdict == "incomparable" and not c.forced
    assert len(c.reasons) == 1 and c.reasons[0].startswith(words)
    assert c.cases  # the changes are still there to look at
    forced = cmp("k1_base", head, force=True, gate=GateSettings(**LENIENT))
    assert forced.forced and forced.verdict == "regressions"
    assert forced.reasons == ("1 case(s) regressed, more than the 0 allowed: regressed",)
    assert forced.warnings[0] == f"compared anyway (--force): {c.reasons[0]}"


def test_incomparable_schema_version():
    head = load("k1_head").model_copy(update={"schema_version": 2})
    c = compare_runs(load("k1_base"), head)
    assert c.verdict == "incomparable"
    assert c.reasons[0].startswith("RunResult schema version 1 in base, 2 in head")


def test_a_database_only_one_run_uses_is_not_a_reason():
    head = load("k1_head")
    head = head.model_copy(
        update={"meta": head.meta.model_copy(update={"fixtures": {"shop": "f1x7u4e0000000aa", "other": "x"}})}
    )
    assert compare_runs(load("k1_base"), head).verdict == "regressions"


def test_force_without_differences_is_not_marked_forced():
    c = cmp("k1_base", "k1_head", force=True)
    assert not c.forced and c.warnings == ()


def test_warnings_for_incomplete_and_other_server_runs():
    base, head = load("k1_base"), load("k1_head")
    meta = head.meta.model_copy(update={"complete": False, "server_version": "17.2"})
    c = compare_runs(base, head.model_copy(update={"meta": meta}))
    assert c.verdict == "regressions"
    assert c.warnings == (
        "the head run is incomplete: cases it did not reach count as removed",
        "PostgreSQL 18.6 in base, 17.2 in head",
    )
    assert any(r.startswith("1 case(s) removed") for r in c.reasons)  # what it did not reach fails the gate


# --- what cannot be judged: suites, selections ------------------------------------------------------------------


def test_runs_of_different_suites_are_incomparable():
    c = cmp("k1_base", "k1_head_other_suite")
    assert c.verdict == "incomparable"
    assert c.reasons == (
        "suite `demo` in base, `other` in head: runs of different suites",
        "no database in common (base: shop; head: other): the runs use different data",
    )


def test_a_tags_subset_against_the_whole_suite_is_incomparable():
    c = cmp("k1_base", "k1_head_tags_ads")
    assert c.verdict == "incomparable"
    assert c.reasons == (
        "case selection: base ran the whole suite, head --tags ads: the runs hold different cases of the suite",
    )


def test_forced_past_a_selection_the_cases_left_out_are_not_judged():
    c = cmp("k1_base", "k1_head_tags_ads", force=True)
    assert c.forced and c.counts["removed"] == 5  # listed ...
    assert not any("removed" in r for r in c.reasons)  # ... but not judged: they were filtered out
    assert c.reasons == (
        "1 case(s) passed on base and are invalid on head (the gold SQL or the fixture broke): became-invalid; "
        "set gate.allow_invalid: true (or --allow-invalid) to accept that",
    )
    assert c.warnings == (
        "compared anyway (--force): case selection: base ran the whole suite, head --tags ads: the runs hold "
        "different cases of the suite",
        "base ran the whole suite, head --tags ads: cases only one run holds are listed as new or removed, "
        "not judged",
    )


def _with_meta(run, **update):
    return run.model_copy(update={"meta": run.meta.model_copy(update=update)})


def test_shards_ids_and_filter_order():
    base, head = load("k1_base"), load("k1_head")
    sharded = compare_runs(base, _with_meta(head, shard="1/3"))
    assert sharded.verdict == "incomparable"
    assert sharded.reasons[0].startswith("case selection: base ran the whole suite, head shard 1/3")
    ids = compare_runs(
        _with_meta(base, filters={"ids": ["a", "b"]}), _with_meta(head, filters={"ids": ["a"]})
    )
    assert ids.reasons[0].startswith("case selection: base ran --id a --id b, head --id a:")
    same = compare_runs(
        _with_meta(base, filters={"tags": ["ads", "easy"]}),
        _with_meta(head, filters={"tags": ["easy", "ads"]}),
        gate=GateSettings(max_regressions=1, **LENIENT),
    )
    assert same.verdict == "pass"  # the same selection, written in another order


def test_a_database_added_by_head_is_fine_but_a_changed_one_is_not():
    base, head = load("k1_base"), load("k1_head")
    added = _with_meta(head, fixtures={**head.meta.fixtures, "new_db": "n3w"})
    assert compare_runs(base, added).verdict == "regressions"  # judged, not refused
    changed = _with_meta(added, fixtures={"shop": "ch4ng3d", "new_db": "n3w"})
    assert compare_runs(base, changed).verdict == "incomparable"


# --- removed, renamed, errored and invalid cases -----------------------------------------------------------------


def test_removed_cases_fail_the_gate_unless_allowed():
    base = load("k1_base")
    kept = tuple(c for c in base.cases if c.id not in ("still-pass", "fixed"))
    head = base.model_copy(update={"cases": kept})
    c = compare_runs(base, head)
    assert c.verdict == "regressions" and c.counts["removed"] == 2
    assert c.reasons == (
        "2 case(s) removed, and a deleted case cannot fail: fixed, still-pass; "
        "set gate.allow_removed: true (or --allow-removed) to accept removals",
    )
    assert compare_runs(base, head, gate=GateSettings(allow_removed=True)).verdict == "pass"


def test_renamed_cases_are_paired_by_content_and_judged_by_their_outcome():
    c = cmp("rename_base", "rename_head")
    changes = by_id(c)
    assert set(changes) == {
        "steady",
        "traffic-dau-id",
        "commerce-gmv-total",
        "added",
    }  # no removed, no new pair
    dau = changes["traffic-dau-id"]
    assert (dau.transition, dau.renamed_from, dau.outcome, dau.judged) == (
        "renamed",
        "dau-id",
        "still_passing",
        "still_passing",
    )
    assert dau.tags == ("traffic", "easy")  # the head's
    gmv = changes["commerce-gmv-total"]
    assert (gmv.renamed_from, gmv.outcome) == ("gmv-total", "fixed")
    assert gmv.reason.startswith("column `sum`")  # a fix shows what was wrong before
    assert c.counts["renamed"] == 2 and c.counts["removed"] == 0 and c.counts["new"] == 1
    assert [ch.id for ch in c.judged_as("fixed")] == ["commerce-gmv-total"] and c.of("fixed") == []
    assert c.verdict == "pass" and c.reasons == ()


def test_a_renamed_case_that_broke_is_a_regression():
    c = cmp("gate_base", "gate_head", gate=GateSettings(**LENIENT))
    broken = by_id(c)["new-broken"]
    assert (broken.transition, broken.outcome, broken.renamed_from) == ("renamed", "regressed", "old-broken")
    assert broken.base_sql and "passed" in broken.base_sql and broken.structural
    assert c.reasons == (
        "2 case(s) regressed, more than the 0 allowed: to-errored, new-broken (renamed from old-broken)",
    )
    assert [ch.id for ch in c.judged_as("regressed")] == ["to-errored", "new-broken"]


def test_a_case_the_change_edited_is_flagged_in_the_comparison_and_the_comment():
    """A pull request that breaks the agent and rewrites the gold to match passes case by case: that must be
    seen. The case keeps its id but not its content hash: flagged, with a note naming it, in every report."""
    from bot.report.render import render_comment

    base = load("rename_base")
    head = base.model_copy(
        update={
            "cases": tuple(
                c.model_copy(update={"case_hash": "0" * 16}) if c.id == "steady" else c for c in base.cases
            )
        }
    )
    c = compare_runs(base, head)
    changes = by_id(c)
    assert changes["steady"].edited and changes["steady"].transition == "still_passing"
    assert not any(ch.edited for i, ch in changes.items() if i != "steady")
    assert any("1 case(s) edited by this change" in w and "steady" in w for w in c.warnings)
    assert "1 case(s) edited by this change" in render_comment(c)
    assert not compare_runs(base, base).warnings  # the same content: nothing to say


def test_cases_asking_the_same_thing_twice_are_not_paired():
    changes = by_id(cmp("gate_base", "gate_head"))
    assert [changes[i].transition for i in ("twin-a", "twin-b", "twin-c", "deleted")] == [
        "removed",
        "removed",
        "new",
        "removed",
    ]


def test_runs_without_content_hashes_get_no_rename_detection():
    def unhashed(run):
        return run.model_copy(
            update={"cases": tuple(c.model_copy(update={"case_hash": None}) for c in run.cases)}
        )

    c = compare_runs(unhashed(load("rename_base")), unhashed(load("rename_head")))
    assert c.counts["renamed"] == 0 and c.counts["removed"] == 2
    assert c.verdict == "regressions" and "2 case(s) removed" in c.reasons[0]
    assert cmp("k1_base", "k1_head").counts["renamed"] == 0  # k1 was written without hashes


def test_passed_to_errored_is_a_regression_at_k1_and_k3():
    c = by_id(cmp("gate_base", "gate_head"))
    assert c["to-errored"].transition == "regressed"
    assert (c["to-errored"].head_status, c["to-errored"].head_error_class) == ("errored", "agent_timeout")
    passing = load("k3_base").cases[3]  # break-k3: passed 3 of 3
    attempts = tuple(
        Attempt(status="errored", reason="agent: crashed", error_class="crash") for _ in range(3)
    )
    errored = passing.model_copy(
        update={"status": "errored", "attempts": attempts, "reason": "agent: crashed"}
    )
    assert classify_case(passing, errored).transition == "regressed"


def test_passed_to_invalid_fails_the_gate_unless_allow_invalid():
    lenient = GateSettings(max_regressions=2, allow_removed=True)
    c = cmp("gate_base", "gate_head", gate=lenient)
    changes = by_id(c)
    assert changes["to-invalid"].transition == changes["failing-to-invalid"].transition == "became_invalid"
    assert c.reasons == (
        "1 case(s) passed on base and are invalid on head (the gold SQL or the fixture broke): to-invalid; "
        "set gate.allow_invalid: true (or --allow-invalid) to accept that",
    )  # failing-to-invalid was not passing: it loses nothing
    allowed = cmp("gate_base", "gate_head", gate=lenient.model_copy(update={"allow_invalid": True}))
    assert allowed.verdict == "pass"


# --- head only: the base commit has no suite ---------------------------------------------------------------------


def test_head_only_passes_without_a_minimum_pass_rate():
    c = compare_head_only(load("k1_head"))
    assert (c.baseline, c.base, c.verdict, c.reasons) == ("none", None, "pass", ())
    assert c.baseline_reason == NO_BASELINE
    assert {ch.transition for ch in c.cases} == {"new"} and c.counts["new"] == len(c.cases) == 10
    assert (c.overall.base_rate, c.overall.head_rate, c.overall.delta) == (None, 0.375, None)
    assert c.by_tag["traffic"].head_rate == 0.5 and c.by_tag["traffic"].base.total == 0
    assert Comparison.model_validate_json(c.model_dump_json()) == c


def test_head_only_fails_below_the_minimum_pass_rate():
    c = compare_head_only(
        load("k1_head"), gate=GateSettings(min_pass_rate=0.5), reason="base abc has no config"
    )
    assert c.verdict == "regressions" and c.baseline_reason == "base abc has no config"
    assert c.reasons == ("head pass rate 37.5% is below the minimum 50.0%",)
    assert compare_head_only(load("k1_head"), gate=GateSettings(min_pass_rate=0.375)).verdict == "pass"
    # only the minimum pass rate judges a head without a base
    assert compare_head_only(load("k1_head"), gate=GateSettings(max_pass_rate_drop=0.0)).verdict == "pass"


def test_head_only_text_summary():
    text = render_summary(compare_head_only(load("k1_head")))
    assert text.splitlines()[0] == "sqlcanary compare: PASS (no baseline: head only)"
    assert f"no baseline: {NO_BASELINE}" in text
    assert (
        "head pass rate 37.5%: 3 of 8 decidable case(s) passed (no minimum pass rate set, so it passes)"
        in text
    )
    assert "  regressed: 1 gold row(s) not matched" in text  # the head's failures, with their reasons


# --- real engine output ------------------------------------------------------------------------------------------


def test_real_shop_runs():
    c = cmp("shop_base", "shop_head")
    assert [ch.id for ch in c.of("regressed")] == [
        "shop-items-sold-th-nov",
        "shop-mgmt-save-id-daily-dau",
        "shop-traffic-dau-id-nov",
    ]
    items = by_id(c)["shop-items-sold-th-nov"]
    assert "gold 9953, prediction 1029" in items.reason
    assert items.structural.startswith("joins differ")
    assert items.source == "benchmarks/shop/cases/commerce.yml:209"
    assert c.counts["still_passing"] == 2 and c.overall.head_rate == 0.4


# --- the command -------------------------------------------------------------------------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = cli_main(["compare", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_regressions_exit_1_and_name_the_cases(capsys, tmp_path):
    out_file = tmp_path / "sub" / "comparison.json"
    code, out, _ = run_cli(
        capsys, str(RUNS / "k1_base.json"), str(RUNS / "k1_head.json"), "--out", str(out_file)
    )
    assert code == 1
    assert out.splitlines()[0] == "sqlcanary compare: REGRESSIONS"
    assert "pass rate 50.0% → 37.5% (-12.5 points)" in out
    assert "regressed (1):\n  regressed: 1 gold row(s) not matched" in out
    assert "fixed (1):\n  fixed: failed before: base: 1 gold row(s)" in out
    assert "regressed 1  fixed 1  became invalid 1" in out
    saved = Comparison.model_validate_json(out_file.read_text(encoding="utf-8"))
    assert saved.verdict == "regressions" and saved.counts["regressed"] == 1


def test_cli_pass_exit_0(capsys):
    code, out, _ = run_cli(
        capsys,
        str(RUNS / "k1_base.json"),
        str(RUNS / "k1_head.json"),
        "--max-regressions",
        "1",
        "--allow-removed",
        "--allow-invalid",
    )
    assert code == 0 and out.startswith("sqlcanary compare: PASS")


def test_cli_gate_flags(capsys):
    base, head = str(RUNS / "k1_base.json"), str(RUNS / "k1_head.json")
    lenient = ("--max-regressions", "1", "--allow-removed", "--allow-invalid")
    code, out, _ = run_cli(capsys, base, head, *lenient, "--min-pass-rate", "40%")
    assert code == 1 and "below the minimum 40.0%" in out
    code, out, _ = run_cli(capsys, base, head, *lenient, "--max-pass-rate-drop", "0.1")
    assert code == 1 and "dropped 12.5 points" in out


def test_cli_repeats_show_pass_counts_and_p_values(capsys):
    code, out, _ = run_cli(capsys, str(RUNS / "k10_base.json"), str(RUNS / "k10_head.json"))
    assert code == 1
    assert "  drop-9-to-2 [9/10 → 2/10, p=0.00781]: " in out
    assert "flaky (labelled, not failed) (1):\n  wobble-9-to-7 [9/10 → 7/10, p=0.25]" in out


def test_cli_incomparable_exit_2_and_force(capsys, tmp_path):
    base, head = str(RUNS / "k1_base.json"), str(RUNS / "k1_head_preset_bird.json")
    code, out, _ = run_cli(capsys, base, head, "--out", str(tmp_path / "c.json"))
    assert code == 2
    assert "INCOMPARABLE" in out and "preset `sqlcanary` in base, `bird` in head" in out and "--force" in out
    assert json.loads((tmp_path / "c.json").read_text())["verdict"] == "incomparable"
    code, out, _ = run_cli(
        capsys, base, head, "--force", "--max-regressions", "1", "--allow-removed", "--allow-invalid"
    )
    assert code == 0 and "PASS (forced)" in out and "compared anyway (--force): preset" in out


def test_cli_different_suites_exit_2(capsys):
    code, out, _ = run_cli(capsys, str(RUNS / "k1_base.json"), str(RUNS / "k1_head_other_suite.json"))
    assert code == 2
    assert out.splitlines()[0] == "sqlcanary compare: INCOMPARABLE"
    assert "suite `demo` in base, `other` in head" in out and "(--force compares them anyway)" in out


def test_cli_tags_subset_exit_2_and_force_compares_and_says_forced(capsys):
    base, head = str(RUNS / "k1_base.json"), str(RUNS / "k1_head_tags_ads.json")
    code, out, _ = run_cli(capsys, base, head)
    assert code == 2 and "case selection: base ran the whole suite, head --tags ads" in out
    code, out, _ = run_cli(capsys, base, head, "--force")
    assert code == 1  # the ads case that passed and became invalid still counts; the left-out cases do not
    assert out.splitlines()[0] == "sqlcanary compare: REGRESSIONS (forced)"
    assert "compared anyway (--force): case selection" in out and "removed, and a deleted case" not in out
    code, out, _ = run_cli(capsys, base, head, "--force", "--allow-invalid")
    assert code == 0 and out.startswith("sqlcanary compare: PASS (forced)")


def test_cli_removed_cases_exit_1_unless_allowed(capsys, tmp_path):
    base = load("k1_base")
    head = base.model_copy(update={"cases": tuple(c for c in base.cases if c.status != "passed")})
    write_run(tmp_path / "head.json", head)  # the passing cases deleted
    args = (str(RUNS / "k1_base.json"), str(tmp_path / "head.json"))
    code, out, _ = run_cli(capsys, *args)
    assert code == 1 and "4 case(s) removed, and a deleted case cannot fail" in out
    assert "removed (4):\n  became-invalid\n  regressed\n  removed\n  still-pass" in out
    code, out, _ = run_cli(capsys, *args, "--allow-removed")
    assert code == 0 and out.startswith("sqlcanary compare: PASS")


def test_cli_renamed_cases_pass_and_are_shown(capsys):
    code, out, _ = run_cli(capsys, str(RUNS / "rename_base.json"), str(RUNS / "rename_head.json"))
    assert code == 0 and out.startswith("sqlcanary compare: PASS")
    assert "renamed 2" in out and "removed" not in out
    assert (
        "fixed (1):\n  commerce-gmv-total (renamed from gmv-total; fixed): failed before: column `sum`" in out
    )


def test_cli_passed_to_invalid_exit_1_unless_allow_invalid(capsys):
    args = (
        str(RUNS / "gate_base.json"),
        str(RUNS / "gate_head.json"),
        "--max-regressions",
        "2",
        "--allow-removed",
    )
    code, out, _ = run_cli(capsys, *args)
    assert code == 1 and "passed on base and are invalid on head" in out and "to-invalid" in out
    code, out, _ = run_cli(capsys, *args, "--allow-invalid")
    assert code == 0
    code, out, _ = run_cli(capsys, *args[:2], "--allow-removed", "--allow-invalid")
    assert (
        code == 1
        and "2 case(s) regressed, more than the 0 allowed: to-errored, new-broken (renamed from" in out
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.json", "k1_head.json"], "no such file"),
        (["k1_base.json", "k1_head_schema2.json"], "schema_version 2 is not 1"),
        (["k1_base.json", "README.md"], "not JSON"),
    ],
)
def test_cli_unreadable_files_exit_2(capsys, args, message):
    code, _, err = run_cli(capsys, *(str(RUNS / a) for a in args))
    assert code == 2 and message in err


@pytest.mark.parametrize(
    "flags",
    [["--min-pass-rate", "1.5"], ["--min-pass-rate", "lots"], ["--alpha", "0"], ["--max-regressions", "-1"]],
)
def test_cli_bad_gate_flags_exit_2(capsys, flags):
    code, _, _ = run_cli(capsys, str(RUNS / "k1_base.json"), str(RUNS / "k1_head.json"), *flags)
    assert code == 2


# --- gate flags shared with `sqlcanary check` --------------------------------------------------------------------


def _parse(*argv: str):
    import argparse

    parser = argparse.ArgumentParser()
    add_gate_arguments(parser)
    return parser.parse_args(argv)


def test_gate_from_args_overrides_only_the_flags_given():
    config_gate = GateSettings(max_regressions=3, alpha=0.01, allow_removed=True)
    assert gate_from_args(_parse(), config_gate) == config_gate
    assert gate_from_args(_parse("--allow-invalid"), config_gate).allow_invalid is True
    gate = gate_from_args(_parse("--max-regressions", "0", "--max-pass-rate-drop", "5%"), config_gate)
    assert gate == GateSettings(max_regressions=0, alpha=0.01, max_pass_rate_drop=0.05, allow_removed=True)
    assert gate_from_args(_parse()) == GateSettings()
    with pytest.raises(ConfigError, match="--alpha"):
        gate_from_args(_parse("--alpha", "1.5"))


def test_fraction_accepts_rates_and_percentages():
    assert fraction("0.9") == 0.9 and fraction("90%") == pytest.approx(0.9) and fraction(" 100% ") == 1.0
    with pytest.raises(Exception, match="between 0 and 1"):
        fraction("120%")
