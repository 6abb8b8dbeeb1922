"""The plans of the perturbed copies, the distillation's greedy choice, the rankings file, and where `perturb:`
comes from (pure parts of `--perturb`; the copies themselves: tests/integration/test_perturb.py)."""

from __future__ import annotations

import json

import pytest

from bot.base.errors import CaseFileError
from bot.cases.loader import load_suite
from bot.run.perturb_plan import MAX_CHANGES, copy_plans, golds_targets, pool_size
from bot.run.perturbed import _greedy, _read_rankings

GOLDS = [
    "SELECT id FROM orders WHERE amount >= 100 ORDER BY placed",
    "SELECT c.name, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.name",
    "SELECT count(note) FROM orders WHERE placed < DATE '2024-03-01'",
]


def test_pool_is_at_least_four_copies_and_none_without_perturb():
    assert [pool_size(k) for k in (0, 1, 3, 4, 7)] == [0, 4, 4, 4, 7]


def test_every_kind_is_in_some_copy_and_copies_differ():
    plans = copy_plans(golds_targets(GOLDS), 4)
    assert len(plans) == 4 and all(plans)
    actions = {c.action for plan in plans for c in plan}
    assert actions == {"set", "null", "tie", "period", "duplicate", "orphan", "family"}
    assert len({tuple(p) for p in plans}) == 4, "each copy is a different mix"
    values = {c.value for plan in plans for c in plan if c.action == "set" and c.column == "amount"}
    assert values >= {"100", "99", "101"} or len(values) >= 2, values


def test_each_gold_keeps_changes_when_a_copy_is_full():
    many = [f"SELECT id FROM t{i} WHERE x > {i} AND y IS NOT NULL ORDER BY z" for i in range(100)]
    plans = copy_plans(golds_targets(many), 4)
    assert all(len(p) == MAX_CHANGES for p in plans), "full"
    for plan in plans:
        assert {c.table for c in plan} == {f"t{i}" for i in range(100)}, (
            "one target of each gold before a second"
        )


def test_plans_are_stable():
    assert copy_plans(golds_targets(GOLDS), 4) == copy_plans(golds_targets(GOLDS), 4)


def test_greedy_puts_the_separating_copies_first_then_the_other_useful_ones():
    kills = {0: {1}, 1: {0, 1}, 2: set(), 3: {2}}
    assert _greedy([0, 1, 2, 3], kills) == [1, 3, 0, 2]
    assert _greedy([2, 3], {2: set(), 3: set()}) == [2, 3], "no mutant survives: the useful copies in order"
    assert _greedy([], {}) == []


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"k": "x"}', '{"k": [-1]}'])
def test_an_unreadable_rankings_file_is_ignored(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    assert _read_rankings(path) == {}
    path.write_text(json.dumps({"k": [2, 0]}))
    assert _read_rankings(path) == {"k": [2, 0]}


def _suite(tmp_path, defaults: dict, case_extra: dict):
    (tmp_path / "f.sql").write_text("CREATE TABLE t (x int);\n")
    case = {"id": "a", "question": "Q?", "gold_sql": "SELECT x FROM t", **case_extra}
    body = {"databases": {"d": "f.sql"}, "defaults": defaults, "cases": [case]}
    (tmp_path / "suite.yml").write_text(json.dumps(body))
    return load_suite(tmp_path / "suite.yml")


def test_a_cases_perturb_wins_over_the_flag_which_wins_over_the_defaults(tmp_path):
    case = _suite(tmp_path, {"perturb": 2}, {}).cases[0]
    assert (case.perturb_copies(None), case.perturb_copies(5), case.perturb_copies(0)) == (2, 5, 0)
    own = _suite(tmp_path, {"perturb": 2}, {"perturb": 0}).cases[0]
    assert own.perturb_copies(5) == 0


def test_write_cases_are_never_perturbed(tmp_path):
    case = _suite(tmp_path, {}, {"category": "management", "perturb": 3, "checks": ["SELECT true"]}).cases[0]
    assert case.perturb_copies(3) == 0


@pytest.mark.parametrize("value", [-1, 17, "many"])
def test_a_bad_perturb_names_the_file_and_line(tmp_path, value):
    with pytest.raises(CaseFileError) as err:
        _suite(tmp_path, {}, {"perturb": value})
    assert "suite.yml" in str(err.value) and "perturb" in str(err.value)


def test_a_check_runs_both_trees_with_the_same_perturb():
    from bot.run.request import RunRequest

    argv = RunRequest(suite="s", perturb=3).run_argv()
    assert argv[argv.index("--perturb") + 1] == "3"
    assert "--perturb" not in RunRequest(suite="s").run_argv()
    with pytest.raises(Exception, match="--perturb must be between 0 and 16"):
        RunRequest(perturb=17)
