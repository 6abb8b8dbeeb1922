"""`repair --max-failures`: failing cases grouped by shared cause, the most promising group first, chosen
round-robin over the groups (no database)."""

from __future__ import annotations

from bot.base.results import CaseResult, Prediction
from bot.compare.comparison import Comparison
from bot.compare.diff import Cause, Hunk
from bot.repair.select import NO_CAUSE, choose, group_failures


def case(id: str, status: str, *used: str) -> CaseResult:
    return CaseResult(
        id=id, status=status, category="query", prediction=Prediction(sql="SELECT 1", used=used)
    )  # type: ignore[arg-type]


CPC = "kb/metrics/cpc.yaml:1-7"
DAU = "kb/metrics/dau.yaml:1-14"
TABLES = "kb/tables.yaml:1-40"  # used by nearly every answer, passing or failing: not a suspect


def test_cases_are_grouped_by_the_span_failing_answers_share_and_passing_ones_do_not():
    failing = [
        case("dau-1", "failed", DAU, TABLES),
        case("cpc-1", "failed", CPC, TABLES),
        case("dau-2", "failed", DAU, TABLES),
        case("odd", "failed"),
        case("dau-3", "failed", DAU, TABLES),
    ]
    passing = [case(f"ok-{i}", "passed", TABLES) for i in range(10)] + [case("cpc-ok", "passed", CPC)]
    groups = group_failures(failing, passing)
    assert [(g.cause, [c.id for c in g.cases]) for g in groups] == [
        (DAU, ["dau-1", "dau-2", "dau-3"]),  # three failing users, no passing one: the first suspect
        (CPC, ["cpc-1"]),
        (NO_CAUSE, ["odd"]),
    ]
    chosen, skipped = choose(groups, 3)
    assert [(c.id, cause) for c, cause in chosen] == [("dau-1", DAU), ("cpc-1", CPC), ("odd", NO_CAUSE)]
    assert skipped == ["dau-2", "dau-3"]  # one case of each cause before a second of any
    chosen, skipped = choose(groups, 4)
    assert [c.id for c, _ in chosen] == ["dau-1", "dau-2", "cpc-1", "odd"] and skipped == ["dau-3"]


def test_from_a_check_the_comparisons_causes_group_first_the_biggest_first():
    failing = [
        case("a", "failed", CPC),
        case("b", "failed", DAU),
        case("c", "failed", DAU),
        case("d", "failed", CPC),
    ]
    hunk = Hunk(old_start=6, old_count=1, new_start=6, new_count=1, text="-x\n+y")
    comparison = Comparison.model_construct(
        causes=(
            Cause(file="kb/metrics/cpc.yaml", hunks=(hunk,), cases=("a",)),
            Cause(file="kb/metrics/dau.yaml", hunks=(hunk,), cases=("b", "c", "gone")),
        )
    )
    groups = group_failures(failing, [], comparison=comparison)
    assert [(g.cause, [c.id for c in g.cases]) for g in groups] == [
        ("kb/metrics/dau.yaml line 6", ["b", "c"]),
        ("kb/metrics/cpc.yaml line 6", ["a"]),
        (CPC, ["d"]),  # not explained by the diff: grouped by its spans, after the causes
    ]
