"""The rules of a table comparison one by one (bot/scoring/table_rules.py): the registry is the order
compare_tables applies, and each rule has a family here, `test_<rule>_...`: a gold/prediction pair the rule
decides (or marks) and one it leaves to the next rule. The options the rules read come from the case model."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, get_type_hints

import pytest

from bot.base.results import ResultSet
from bot.cases.model import CompareOptions
from bot.scoring import table_rules, tables
from bot.scoring.execution import DEFAULTS, resolve_options
from bot.scoring.table_options import TableOptions
from bot.scoring.table_rules import RULES
from bot.scoring.table_state import Comparison, Rule, TableVerdict
from bot.scoring.tables import OrderCheck, compare_tables
from tests.unit.test_tables import BOOL, INT4, PEOPLE, RANKED, TEXT, one, rs

REVERSED = rs("k, v", (INT4, TEXT), list(reversed(RANKED.rows)))


def before(
    rule: Rule, gold: ResultSet, pred: ResultSet, order: OrderCheck | None = None, **opts: Any
) -> Comparison:
    """The comparison as `rule` finds it: every earlier rule applied, none of them deciding."""
    c = Comparison(gold, pred, TableOptions(**opts), order)
    for earlier in RULES[: RULES.index(rule)]:
        assert earlier(c) is None, f"{earlier.__name__} decided before {rule.__name__}"
    return c


def decide(rule: Rule, gold: ResultSet, pred: ResultSet, order: OrderCheck | None = None, **opts: Any):
    """What `rule` returns for the pair, and the comparison after it."""
    c = before(rule, gold, pred, order, **opts)
    return rule(c), c


# --- the registry ----------------------------------------------------------------------------------------------


def _recording(names: list[str]) -> tuple[Rule, ...]:
    def wrap(rule: Rule) -> Rule:
        def recorded(c: Comparison) -> TableVerdict | None:
            names.append(rule.__name__)
            return rule(c)

        return recorded

    return tuple(wrap(rule) for rule in RULES)


def test_compare_tables_applies_the_registry_in_its_order(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tables.RULES is table_rules.RULES
    applied: list[str] = []
    monkeypatch.setattr(tables, "RULES", _recording(applied))
    pred = rs("id, name", (INT4, TEXT), [(1, "Ada"), (2, "Bob"), (3, "Cy")])
    v = compare_tables(PEOPLE, pred, opts=TableOptions())  # a mismatch: every rule looks
    assert v.match is False
    assert applied == [rule.__name__ for rule in RULES]
    assert applied[-1] == "explained_mismatch"


def test_compare_tables_stops_at_the_first_rule_that_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    applied: list[str] = []
    monkeypatch.setattr(tables, "RULES", _recording(applied))
    v = compare_tables(one(INT4, 1), rs("a, b", (INT4, INT4), [(1, 2)]), opts=TableOptions())
    assert v.kind == "mismatch" and v.message.startswith("column count differs")
    assert applied == [rule.__name__ for rule in RULES[: RULES.index(table_rules.column_count) + 1]]


def test_every_rule_is_named_once_and_has_a_test_family() -> None:
    names = [rule.__name__ for rule in RULES]
    assert len(set(names)) == len(names)
    tests_here = [name for name in globals() if name.startswith("test_")]
    for name in names:
        assert any(t.startswith(f"test_{name}_") for t in tests_here), f"no test family for rule {name}"


def test_the_last_rule_always_decides() -> None:
    for pred in (one(INT4, 2), one(INT4, 1, 1), one(TEXT, "x", name="z")):
        verdict = table_rules.explained_mismatch(before(table_rules.explained_mismatch, one(INT4, 1), pred))
        assert isinstance(verdict, TableVerdict) and verdict.match is False


# --- one family per rule ---------------------------------------------------------------------------------------


def test_row_cap_both_truncated_is_undecidable() -> None:
    v, c = decide(table_rules.row_cap, one(INT4, 1, truncated=True), one(INT4, 1, truncated=True))
    assert v == TableVerdict(
        None, "undecidable", "both results exceed the row cap: cannot decide", ("truncated",)
    )


def test_row_cap_one_truncated_side_fails_on_multisets_and_is_undecidable_on_sets() -> None:
    v, _ = decide(table_rules.row_cap, one(INT4, 1), one(INT4, 1, truncated=True))
    assert (v.match, v.message) == (
        False,
        "row count differs: the prediction exceeds the row cap, the other does not",
    )
    v, _ = decide(table_rules.row_cap, one(INT4, 1, truncated=True), one(INT4, 1), rows="set")
    assert v.match is None and v.message.startswith("the gold exceeds the row cap; under set semantics")


def test_row_cap_passes_untruncated_results() -> None:
    v, c = decide(table_rules.row_cap, one(INT4, 1), one(INT4, 2))
    assert v is None and c.flags == []


def test_flag_order_checked_marks_an_order_check_only() -> None:
    assert decide(table_rules.flag_order_checked, RANKED, RANKED, OrderCheck((0,)))[1].flags == [
        "order_checked"
    ]
    assert decide(table_rules.flag_order_checked, RANKED, RANKED)[1].flags == []


def test_flag_gold_empty_marks_an_empty_gold_only() -> None:
    v, c = decide(table_rules.flag_gold_empty, one(INT4), one(INT4, 1))
    assert v is None and c.flags == ["gold_empty"]
    assert decide(table_rules.flag_gold_empty, one(INT4, 1), one(INT4))[1].flags == []


def test_column_count_fails_other_widths_with_both_column_lists() -> None:
    v, _ = decide(table_rules.column_count, PEOPLE, one(INT4, 1, 2, 3, name="id"))
    assert v.message == "column count differs: gold has 2 (id, name), prediction has 1 (id)"
    assert v.details == {"gold_columns": ["id", "name"], "pred_columns": ["id"]}


def test_column_count_lets_a_wider_prediction_through_only_under_subset() -> None:
    wider = rs("id, name, x", (INT4, TEXT, INT4), [(1, "Ada", 0), (2, "Bo", 0), (3, "Cy", 0)])
    assert decide(table_rules.column_count, PEOPLE, wider, columns="subset")[0] is None
    assert decide(table_rules.column_count, PEOPLE, wider)[0].match is False
    assert decide(table_rules.column_count, wider, PEOPLE, columns="subset")[0].match is False


def test_flag_ambiguous_ties_marks_a_limit_through_a_tie() -> None:
    c = decide(table_rules.flag_ambiguous_ties, RANKED, RANKED, OrderCheck((0,), tie_cut=True))[1]
    assert c.flags == ["order_checked", "ambiguous_ties"]
    assert (
        "ambiguous_ties"
        not in decide(table_rules.flag_ambiguous_ties, RANKED, RANKED, OrderCheck((0,)))[1].flags
    )


def test_empty_gold_fails_only_when_the_option_says_so() -> None:
    v, _ = decide(table_rules.empty_gold_fails, one(INT4), one(INT4), empty_gold_fails=True)
    assert v == TableVerdict(False, "mismatch", "the gold is empty (empty_gold_fails)", ("gold_empty",))
    assert decide(table_rules.empty_gold_fails, one(INT4), one(INT4))[0] is None


def test_raw_rows_equal_matches_the_same_rows_in_any_order() -> None:
    v, _ = decide(table_rules.raw_rows_equal, RANKED, REVERSED)
    assert v == TableVerdict(True, "exact", "results match", (), {}, (0, 1))


def test_raw_rows_equal_leaves_other_rows_and_loosened_options_to_the_slow_path() -> None:
    assert decide(table_rules.raw_rows_equal, PEOPLE, rs("id, name", (INT4, TEXT), [(1, "Ada")]))[0] is None
    assert decide(table_rules.raw_rows_equal, RANKED, REVERSED, OrderCheck((0,)))[0] is None
    assert decide(table_rules.raw_rows_equal, RANKED, RANKED, bool_is_int=True)[0] is None
    assert decide(table_rules.raw_rows_equal, RANKED, RANKED, rows="set")[0] is None


def test_normalize_values_loosens_as_the_options_say() -> None:
    gold, pred = one(BOOL, True, False), one(INT4, 1, 0)
    strict = decide(table_rules.normalize_values, gold, pred)[1]
    assert strict.g != strict.p
    loose = decide(table_rules.normalize_values, gold, pred, bool_is_int=True)[1]
    assert loose.g == loose.p and len(loose.g) == 2


def test_set_semantics_dedupes_the_gold_and_flags_it() -> None:
    v, c = decide(table_rules.set_semantics, one(INT4, 1, 1, 2), one(INT4, 1, 2), rows="set")
    assert v is None and c.flags == ["set_semantics"] and len(c.g) == 2
    assert len(decide(table_rules.set_semantics, one(INT4, 1, 1, 2), one(INT4, 1, 2))[1].g) == 3


def test_column_mapping_matches_under_a_permutation() -> None:
    pred = rs("name, id", (TEXT, INT4), [(n, i) for i, n in PEOPLE.rows])
    v, _ = decide(table_rules.column_mapping, PEOPLE, pred)
    assert (v.match, v.kind, v.message, v.mapping) == (
        True,
        "permuted_columns",
        "results match (permuted columns)",
        (1, 0),
    )


def test_column_mapping_notes_the_mappings_whose_rows_differ() -> None:
    pred = rs("id, name", (INT4, TEXT), [(1, "Ada"), (2, "Bob"), (3, "Cy")])
    v, c = decide(table_rules.column_mapping, PEOPLE, pred)
    assert v is None and c.tried == [(0, 1)] and c.order_fail is None


def test_row_order_fails_rows_that_match_in_another_order() -> None:
    v, c = decide(table_rules.row_order, RANKED, REVERSED, OrderCheck((0,)))
    assert c.tried == []
    assert v == TableVerdict(False, "mismatch", c.order_fail, ("order_checked",))
    assert v.message == "row order differs at row 1: gold has (1) there, prediction has (3)"


def test_row_order_passes_when_no_mapping_failed_on_order() -> None:
    pred = rs("id, name", (INT4, TEXT), [(1, "Ada"), (2, "Bob"), (3, "Cy")])
    assert decide(table_rules.row_order, PEOPLE, pred)[0] is None


def test_explained_mismatch_names_the_first_difference() -> None:
    pred = rs("id, name", (INT4, TEXT), [(1, "Ada"), (2, "Bob"), (3, "Cy")])
    v, _ = decide(table_rules.explained_mismatch, PEOPLE, pred)
    assert v.message == "1 of 3 rows differs; `name` for (id=2): gold 'Bo', prediction 'Bob'"
    assert (v.details["gold_rows"], v.details["pred_rows"]) == (3, 3)


def test_explained_mismatch_says_when_no_column_lines_up() -> None:
    pred = rs("a, b", (TEXT, TEXT), [("x", "y"), ("z", "w")])
    v, c = decide(table_rules.explained_mismatch, one(INT4, 1, 2), pred, columns="subset")
    assert c.tried == []
    assert v.message == "no column of the prediction lines up with the gold's (v)"


# --- the options the rules read ---------------------------------------------------------------------------------


def test_every_table_option_is_a_compare_option_of_the_same_values() -> None:
    hints = get_type_hints(TableOptions)
    for f in fields(TableOptions):
        declared = CompareOptions.model_fields[f.name].annotation
        assert declared == hints[f.name] | None, f.name


def test_table_options_take_what_the_resolved_compare_options_set() -> None:
    assert TableOptions.from_compare(CompareOptions()) == TableOptions()
    assert TableOptions.from_compare(DEFAULTS) == TableOptions()
    case = CompareOptions(rows="set", columns="subset", abs_tol=0.5, bool_is_int=True, empty_gold_fails=True)
    opts = TableOptions.from_compare(resolve_options(case))
    assert opts == TableOptions(
        rows="set", columns="subset", abs_tol=0.5, bool_is_int=True, empty_gold_fails=True
    )
