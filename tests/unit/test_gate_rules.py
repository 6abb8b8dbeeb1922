"""bot.compare.gate and bot.compare.transitions, rule by rule on hand-made cases (benchmarks/mutation found the
rules no other test held: the check conclusion, edited cases, renames next to kept cases, net counts of repeated
attempts, the alpha bound, and the words of each reason)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.errors import ConfigError, ResultFileError
from bot.base.results import Attempt, CaseResult, Counts, Prediction, RunResult, read_run
from bot.compare.comparison import CaseChange, rate_delta
from bot.compare.gate import check_conclusion, exit_code, gate_reasons, pass_rate_floor, resolve_gate
from bot.compare.transitions import (
    classify_case,
    edited_warning,
    fails_base_version,
    find_renames,
    new_cases,
    pair_cases,
)
from bot.config.gate_settings import GateSettings

TEMPLATE = read_run(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "k1_base.json")
FLAT = rate_delta(Counts(total=1, passed=1), Counts(total=1, passed=1))


def case(id: str, status: str = "passed", **kw) -> CaseResult:
    return CaseResult(id=id, status=status, category="c", **kw)  # type: ignore[arg-type]


def attempts(*outcomes: bool, reason: str = "wrong rows") -> tuple[Attempt, ...]:
    return tuple(Attempt(status="passed" if ok else "failed", reason="" if ok else reason) for ok in outcomes)


def run(*cases: CaseResult) -> RunResult:
    return TEMPLATE.model_copy(update={"cases": cases})


def change(id: str = "x", transition: str = "still_passing", **kw) -> CaseChange:
    return CaseChange(id=id, transition=transition, **kw)  # type: ignore[arg-type]


# --- what a verdict means to GitHub and to a shell ------------------------------------------------------------


def test_check_conclusions() -> None:
    assert check_conclusion("pass") == "success"
    assert check_conclusion("regressions") == "failure", "regressions fail the check by default"
    assert check_conclusion("incomparable") == "failure", "nothing judged is never neutral"
    assert check_conclusion("regressions", enforce=False) == "neutral"
    assert check_conclusion("pass", enforce=False) == "success"
    assert check_conclusion("incomparable", enforce=False) == "failure"
    assert check_conclusion("regressions", enforce=True) == "failure"
    assert [exit_code(v) for v in ("pass", "regressions", "incomparable")] == [0, 1, 2]


# --- the settings ---------------------------------------------------------------------------------------------


def test_resolve_gate_names_the_unknown_setting_and_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_gate(None, {"max_regression": 1})
    assert str(caught.value).startswith("unknown gate setting 'max_regression' (known: max_regressions, ")
    with pytest.raises(ConfigError, match=r"^--max-pass-rate-drop: "):
        resolve_gate(None, {"max_pass_rate_drop": 2})
    assert resolve_gate(
        GateSettings(max_regressions=3), {"alpha": 0.1, "max_regressions": None}
    ) == GateSettings(max_regressions=3, alpha=0.1)


# --- the reasons ----------------------------------------------------------------------------------------------


def test_reasons_list_ten_ids_then_count_the_rest() -> None:
    eleven = [change(f"c{i:02d}", "regressed") for i in range(11)]
    (reason,) = gate_reasons(eleven, FLAT, GateSettings())
    assert reason.endswith(": " + ", ".join(f"c{i:02d}" for i in range(10)) + " and 1 more")
    (reason,) = gate_reasons(eleven[:10], FLAT, GateSettings())
    assert reason.endswith("allowed: " + ", ".join(f"c{i:02d}" for i in range(10)))


def test_removed_cases_are_judged_unless_the_runs_hold_different_selections() -> None:
    removed = [change("gone", "removed", base_status="passed")]
    (reason,) = gate_reasons(removed, FLAT, GateSettings())
    assert reason.startswith("1 case(s) removed")
    assert gate_reasons(removed, FLAT, GateSettings(), judge_removed=False) == []
    assert gate_reasons(removed, FLAT, GateSettings(allow_removed=True)) == []


def test_an_edited_case_failing_its_base_version_fails_the_gate_unless_allowed() -> None:
    edited = change("e", edited=True, base_status="passed", against_base="failed")
    (reason,) = gate_reasons([edited], FLAT, GateSettings())
    assert reason == (
        "1 edited case(s) passed on base, and the head's answer fails the base's version of the case (it passes "
        "only the head's new version): e; set gate.allow_edited: true (or --allow-edited) to accept the edit"
    )
    assert gate_reasons([edited], FLAT, GateSettings(allow_edited=True)) == []
    # an edited case that regressed is counted once, as a regression
    regressed = edited.model_copy(update={"transition": "regressed"})
    (reason,) = gate_reasons([regressed], FLAT, GateSettings())
    assert reason.startswith("1 case(s) regressed")


def test_fails_base_version_needs_every_condition() -> None:
    edited = change(edited=True, base_status="passed", against_base="failed")
    assert fails_base_version(edited)
    assert fails_base_version(edited.model_copy(update={"against_base": "errored"}))
    assert not fails_base_version(edited.model_copy(update={"edited": False}))
    assert not fails_base_version(edited.model_copy(update={"base_status": "failed"}))
    assert not fails_base_version(edited.model_copy(update={"against_base": None}))
    assert not fails_base_version(edited.model_copy(update={"against_base": "passed"}))


def test_pass_rate_floor_words() -> None:
    assert pass_rate_floor(None, GateSettings(min_pass_rate=0.9)) == [
        "the head run has no decidable case, so it cannot reach the minimum pass rate 90.0%"
    ]
    assert pass_rate_floor(0.5, GateSettings(min_pass_rate=0.9)) == [
        "head pass rate 50.0% is below the minimum 90.0%"
    ]
    assert pass_rate_floor(0.9, GateSettings(min_pass_rate=0.9)) == []
    assert pass_rate_floor(None, GateSettings()) == []


# --- pairing and renames --------------------------------------------------------------------------------------


def test_a_kept_case_sharing_a_hash_with_a_new_case_keeps_its_regression() -> None:
    """`kept` is in both runs; `added` is new with the same content hash: no rename, and kept's break shows."""
    base = run(case("kept", case_hash="h"), case("other", case_hash="g"))
    head = run(
        case("kept", "failed", case_hash="h"), case("added", case_hash="h"), case("other", case_hash="g")
    )
    assert find_renames({c.id: c for c in base.cases}, {c.id: c for c in head.cases}) == {}
    changes = {c.id: c for c in pair_cases(base, head)}
    assert changes["kept"].transition == "regressed"
    assert changes["added"].transition == "new"
    # the same the other way round: a kept case beside a removed one of its hash
    base = run(case("kept", case_hash="h"), case("dropped", case_hash="h"))
    head = run(case("kept", "failed", case_hash="h"), case("fresh", case_hash="z"))
    changes = {c.id: c for c in pair_cases(base, head)}
    assert (changes["kept"].transition, changes["dropped"].transition) == ("regressed", "removed")


def test_renamed_and_new_cases_are_judged_under_the_gate_given() -> None:
    base = run(case("old", case_hash="h", attempts=attempts(True, True, True)))
    head = run(case("new", "failed", case_hash="h", attempts=attempts(False, False, True)))
    loose = GateSettings(alpha=0.3)  # two of three attempts moved: p = 0.25
    (renamed,) = pair_cases(base, head, gate=loose)
    assert (renamed.transition, renamed.outcome, renamed.renamed_from) == ("renamed", "regressed", "old")
    (renamed,) = pair_cases(base, head)
    assert renamed.outcome == "flaky"
    (fresh,) = new_cases(head, gate=loose)
    assert fresh.transition == "new" and fresh.reason == "wrong rows"


def test_edited_cases_carry_the_judgement_by_the_base_version() -> None:
    base = run(case("e", case_hash="h1"), case("same", case_hash="s"))
    head = run(case("e", case_hash="h2"), case("same", case_hash="s"))
    changes = {c.id: c for c in pair_cases(base, head, against_base={"e": "failed", "same": "passed"})}
    assert (changes["e"].edited, changes["e"].against_base) == (True, "failed")
    assert (changes["same"].edited, changes["same"].against_base) == (False, None)


def test_a_run_holding_a_case_twice_names_the_side_and_the_case() -> None:
    twice = run(case("a"), case("a"))
    with pytest.raises(ResultFileError, match=r"^case a: the base run holds case 'a' twice$") as caught:
        pair_cases(twice, run(case("a")))
    assert caught.value.case_id == "a"
    with pytest.raises(ResultFileError, match=r"^case a: the head run holds case 'a' twice$"):
        pair_cases(run(case("a")), twice)
    with pytest.raises(ResultFileError, match=r"^case a: the head run holds case 'a' twice$"):
        new_cases(twice)


def test_edited_warning_lists_ten_and_the_judgements() -> None:
    edited = [change(f"e{i:02d}", edited=True, against_base="failed") for i in range(11)]
    unjudged = change("u", edited=True)
    not_edited = change("n", against_base="failed")
    head = "case(s) edited by this change (question, database, gold SQL or category): "
    tail = (
        "Each side was judged by its own version, so review that the new gold still asks what the old one did"
    )
    ten = ", ".join(f"e{i:02d}" for i in range(10))
    judged = ", ".join(f"e{i:02d}: failed" for i in range(10))
    assert edited_warning([*edited, unjudged, not_edited]) == [
        f"12 {head}{ten} and 2 more. {tail}; the head's answers were also judged by the base's version "
        f"({judged} and 1 more)"
    ]
    assert edited_warning(edited) == [
        f"11 {head}{ten} and 1 more. {tail}; the head's answers were also judged by the base's version "
        f"({judged} and 1 more)"
    ]
    assert edited_warning(edited[:10]) == [
        f"10 {head}{ten}. {tail}; the head's answers were also judged by the base's version ({judged})"
    ]
    assert edited_warning([unjudged]) == [f"1 {head}u. {tail}"]
    assert edited_warning([not_edited]) == []


# --- one case's transition ------------------------------------------------------------------------------------


def test_classify_case_needs_a_side_and_says_so() -> None:
    with pytest.raises(ValueError, match=r"^classify_case needs a base or a head case$"):
        classify_case(None, None)


def test_repeated_attempts_count_the_net_movement() -> None:
    """8 attempts broke and 1 was fixed: the net count is 7 (p = 10/512 < 0.05)."""
    base = case("r", attempts=attempts(*[True] * 9, False))
    head = case("r", "failed", attempts=attempts(*[False] * 8, True, True))
    assert classify_case(base, head, gate=GateSettings(min_regression_count=7)).transition == "regressed"
    assert classify_case(base, head, gate=GateSettings(min_regression_count=8)).transition == "flaky"
    # and the other way round, for a fix
    assert classify_case(head, base, gate=GateSettings(min_regression_count=7)).transition == "fixed"
    assert classify_case(head, base, gate=GateSettings(min_regression_count=8)).transition == "flaky"


def test_a_p_value_equal_to_alpha_is_not_significant() -> None:
    base = case("r", attempts=attempts(True, True))
    head = case("r", attempts=attempts(False, True))  # one attempt moved: p = 0.5
    assert classify_case(base, head, gate=GateSettings(alpha=0.5)).transition == "flaky"
    assert classify_case(head, base, gate=GateSettings(alpha=0.5)).transition == "flaky"
    assert classify_case(base, head, gate=GateSettings(alpha=0.6)).transition == "regressed"
    assert classify_case(head, base, gate=GateSettings(alpha=0.6)).transition == "fixed"


def test_two_attempts_have_a_p_value() -> None:
    base = case("r", attempts=attempts(True, True))
    head = case("r", "failed", attempts=attempts(False, False))
    got = classify_case(base, head)
    assert (got.transition, got.p_value) == ("regressed", 0.25)
    assert classify_case(case("r"), case("r", "failed")).p_value is None


def test_reasons_of_each_transition() -> None:
    # a removed case and a fix show what the base got wrong
    assert classify_case(case("r", "failed", reason="base wrong"), None).reason == "base wrong"
    fixed = classify_case(case("r", "failed", reason="base wrong"), case("r", reason=""))
    assert (fixed.transition, fixed.reason) == ("fixed", "base wrong")
    # flaky: the head's first failing attempt, else the base's
    base = case("r", attempts=attempts(True, False, reason="base attempt wrong"))
    head = case("r", attempts=attempts(True, True))
    flaky = classify_case(base, head)
    assert (flaky.transition, flaky.reason) == ("flaky", "base attempt wrong")
    # still passing: nothing to say, even when the base failed an attempt once
    assert classify_case(case("r", reason="note"), case("r")).reason == ""
    # the first attempt that did not pass and says why (a passing attempt's note is not a failure)
    noted = (
        Attempt(status="passed", reason="within tolerance"),
        Attempt(status="failed", reason=""),
        Attempt(status="failed", reason="second is wrong"),
    )
    regressed = classify_case(case("r"), case("r", "failed", attempts=noted))
    assert regressed.reason == "second is wrong"


def test_the_kb_spans_each_side_used_are_kept() -> None:
    base = case("r", prediction=Prediction(sql="SELECT 1", used=("kb/a.yml:1-2",)))
    head = case("r", "failed", prediction=Prediction(sql="SELECT 2", used=("kb/b.yml:3-4",)))
    got = classify_case(base, head)
    assert (got.base_used, got.head_used) == (("kb/a.yml:1-2",), ("kb/b.yml:3-4",))
    assert (got.base_sql, got.head_sql) == ("SELECT 1", "SELECT 2")
    assert classify_case(None, head).base_used == () and classify_case(base, None).head_used == ()
