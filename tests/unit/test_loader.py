"""Suite loading (no database): both suite forms, aliases, gold alternatives, defaults, and every bad-input error.

The broken suites live in tests/fixtures/suites/bad_*/; in the file an error is about, the line the error must
name carries a `# ERROR` comment (and the first definition of a duplicate id a `# FIRST` comment).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.base.errors import EXIT_BAD_INPUT, CaseFileError
from bot.cases.choices import expand_column_choices
from bot.cases.fields import parse_duration_ms
from bot.cases.loader import load_suite
from bot.cases.model import Case
from bot.cases.selection import select_cases

SUITES = Path(__file__).resolve().parents[1] / "fixtures" / "suites"


def _marker_line(path: Path, marker: str = "# ERROR") -> int:
    lines = [i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if marker in text]
    assert len(lines) == 1, f"{path} must have exactly one {marker!r} comment"
    return lines[0]


@pytest.fixture(scope="module")
def good():
    return load_suite(SUITES / "good_folder")


# --- the two suite forms ---------------------------------------------------------------------------------------


def test_suite_folder_loads_every_case_file_in_order(good) -> None:
    assert good.name == "good"
    assert [c.id for c in good.cases] == [
        "inline-1",
        "shop-names",
        "shop-alternatives",
        "shop-choices",
        "shop-own-options",
        "hr-salaries",
        "hr-on-shop",
    ]
    assert set(good.databases) == {"shop", "hr"}
    assert good.databases["hr"] == ((SUITES / "good_folder" / "fixtures" / "hr.sql").resolve(),)
    assert good.settings.statement_timeout_ms == 5000
    assert good.settings.row_cap == 500
    assert good.root == (SUITES / "good_folder").resolve()


def test_case_source_names_file_and_line(good) -> None:
    case = good.case("shop-alternatives")
    path, _, line = case.source.rpartition(":")
    assert Path(path).name == "a_list.yml"
    assert Path(path).read_text().splitlines()[int(line) - 1].strip() == "- id: shop-alternatives"


def test_case_sources_are_relative_to_the_repository_root_from_any_folder(monkeypatch) -> None:
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(SUITES)
    case = load_suite("good_folder").case("shop-alternatives")
    path, _, line = case.source.rpartition(":")
    assert not Path(path).is_absolute() and (root / path).is_file()
    assert path == (SUITES / "good_folder").resolve().relative_to(root).as_posix() + "/cases/a_list.yml"


def test_single_file_suite_loads_with_its_only_database_as_default() -> None:
    suite = load_suite(SUITES / "single" / "single.yml")
    assert suite.name == "single"  # the file stem when there is no `name:`
    assert [c.id for c in suite.cases] == ["one", "two"]
    assert {c.db for c in suite.cases} == {"shop"}
    assert suite.settings.statement_timeout_ms == 30_000


def test_expected_sql_is_an_alias_of_gold_sql(good) -> None:
    assert good.case("shop-names").gold_sql == ("SELECT name FROM customers",)


def test_gold_list_is_kept_as_alternatives_in_order(good) -> None:
    assert good.case("shop-alternatives").gold_sql == (
        "SELECT name FROM customers ORDER BY id",
        "SELECT name FROM customers",
    )


def test_column_choices_expand_to_every_non_empty_subset_smallest_first(good) -> None:
    assert good.case("shop-choices").gold_sql == (
        "SELECT id, name FROM customers",
        "SELECT id, city FROM customers",
        "SELECT id, name, city FROM customers",
    )


def test_gold_sql_and_expected_sql_together_are_refused(tmp_path: Path) -> None:
    (tmp_path / "s.sql").write_text("SELECT 1;")
    suite = tmp_path / "suite.yml"
    suite.write_text(
        "databases: {d: s.sql}\ncases:\n  - id: both\n    question: q?\n"
        "    gold_sql: SELECT 1\n    expected_sql: SELECT 2\n"
    )
    with pytest.raises(CaseFileError, match="not both") as info:
        load_suite(suite)
    assert info.value.case_id == "both" and info.value.line == 3


# --- defaults: suite < case file < case ------------------------------------------------------------------------


def test_suite_defaults_apply_to_inline_and_case_file_cases(good) -> None:
    for cid in ("inline-1", "shop-names"):
        case = good.case(cid)
        assert case.db == "shop"
        assert case.tags == ("smoke",)
        assert case.compare.rows == "set" and case.compare.abs_tol == 0.01


def test_case_file_defaults_override_suite_defaults(good) -> None:
    case = good.case("hr-salaries")
    assert case.db == "hr"
    assert case.tags == ("hr",)
    assert case.compare.rows == "set"  # the suite's compare still applies


def test_case_keys_override_file_defaults(good) -> None:
    assert good.case("hr-on-shop").db == "shop"
    assert good.case("hr-on-shop").tags == ("hr",)


def test_case_compare_merges_field_by_field_over_the_defaults(good) -> None:
    compare = good.case("shop-own-options").compare
    assert (compare.rows, compare.columns, compare.abs_tol) == ("multiset", "positional", 0.01)
    assert good.case("shop-own-options").tags == ("cities", "slow")


def test_suite_hash_follows_fixture_content(tmp_path: Path) -> None:
    copy = tmp_path / "suite"
    shutil.copytree(SUITES / "good_folder", copy)
    before = load_suite(copy).content_hash
    assert load_suite(copy).content_hash == before
    fixture = copy / "fixtures" / "hr.sql"
    fixture.write_text(fixture.read_text() + "INSERT INTO staff VALUES (2, 'Di', 5.00);\n")
    assert load_suite(copy).content_hash != before


# --- errors: each is a CaseFileError naming file:line (and the case) -------------------------------------------


@dataclass(frozen=True)
class Bad:
    folder: str
    file: str  # the file the error is about, relative to the folder
    case_id: str | None
    fragment: str


BAD = [
    Bad("bad_unknown_key", "suite.yml", "typo", "unknown key 'tag'"),
    Bad("bad_missing_fixture", "suite.yml", None, "'missing/hr.sql'"),
    Bad("bad_yaml", "suite.yml", None, "unparsable YAML"),
    Bad("bad_duplicate_key", "suite.yml", None, "duplicate key 'question'"),
    Bad("bad_gold_sql", "suite.yml", "broken-gold", "gold_sql does not parse"),
    Bad("bad_gold_alternative", "suite.yml", "broken-alt", "gold_sql does not parse"),
    Bad("bad_missing_question", "suite.yml", "mute", "needs a `question`"),
    Bad("bad_category", "suite.yml", "reporting", "category"),
    Bad("bad_cases_not_list", "suite.yml", None, "`cases` must be a list"),
    Bad("bad_case_file_cases", "cases/c.yml", None, "`cases` must be a list"),
    Bad("bad_duplicate_id", "cases/b.yml", "twice", "duplicate case id"),
]
# Errors that name a line, but not the line of the bad value (reported to the lead; see the reasons).
BAD_IMPRECISE = [
    pytest.param(
        Bad("bad_yaml_quote", "cases/quote.yml", None, "unparsable YAML"),
    ),
    pytest.param(
        Bad("bad_unknown_db", "suite.yml", "elsewhere", "unknown db 'warehouse'"),
    ),
    pytest.param(
        Bad("bad_compare_value", "suite.yml", "bag", "compare.rows"),
    ),
    pytest.param(
        Bad("bad_compare_key", "suite.yml", "tolerant", "compare.tolerance"),
    ),
]


def _load_error(folder: str) -> CaseFileError:
    with pytest.raises(CaseFileError) as info:
        load_suite(SUITES / folder)
    return info.value


@pytest.mark.parametrize("bad", [*BAD, *BAD_IMPRECISE], ids=lambda b: b.folder)
def test_bad_suite_error_names_file_line_and_case(bad: Bad) -> None:
    err = _load_error(bad.folder)
    target = SUITES / bad.folder / bad.file
    line = _marker_line(target)
    assert err.exit_code == EXIT_BAD_INPUT
    assert Path(err.path or "").resolve() == target.resolve()
    assert err.line == line
    assert err.case_id == bad.case_id
    text = str(err)
    assert f"{bad.file.split('/')[-1]}:{line}" in text
    if bad.case_id:
        assert f"(case {bad.case_id})" in text
    assert bad.fragment in text


@pytest.mark.parametrize("bad", [p.values[0] for p in BAD_IMPRECISE], ids=lambda b: b.folder)
def test_imprecise_errors_are_still_case_file_errors_naming_file_and_case(bad: Bad) -> None:
    err = _load_error(bad.folder)
    assert Path(err.path or "").resolve() == (SUITES / bad.folder / bad.file).resolve()
    assert err.line is not None and err.case_id == bad.case_id


def test_duplicate_id_names_both_places() -> None:
    err = _load_error("bad_duplicate_id")
    first = SUITES / "bad_duplicate_id" / "cases" / "a.yml"
    assert f"a.yml:{_marker_line(first, '# FIRST')}" in str(err)
    assert "b.yml:" in str(err)


def test_bad_category_lists_the_allowed_values() -> None:
    text = str(_load_error("bad_category"))
    for allowed in ("query", "personalization", "management", "efficiency"):
        assert allowed in text


def test_missing_suite_path_is_a_case_file_error(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError, match="no such suite") as info:
        load_suite(tmp_path / "nope")
    assert info.value.path == str(tmp_path / "nope")


def test_folder_without_suite_yml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError, match="no suite.yml"):
        load_suite(tmp_path)


def test_case_without_db_in_a_two_database_suite_names_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "s.sql").write_text("SELECT 1;")
    suite = tmp_path / "suite.yml"
    suite.write_text(
        "databases: {a: s.sql, b: s.sql}\ncases:\n  - id: where\n    question: q?\n    gold_sql: SELECT 1\n"
    )
    err = _load_error_at(suite)
    assert err.case_id == "where" and err.line == 3
    assert "a, b" in str(err)


def _load_error_at(path: Path) -> CaseFileError:
    with pytest.raises(CaseFileError) as info:
        load_suite(path)
    return info.value


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30s", 30_000), ("500ms", 500), ("2min", 120_000), ("1.5s", 1500), (250, 250), ("90", 90)],
)
def test_parse_duration(text: object, ms: int) -> None:
    assert parse_duration_ms(text, path="x", line=1) == ms


@pytest.mark.parametrize("text", ["soon", "5 hours", True, "-1s"])
def test_parse_duration_refuses_nonsense(text: object) -> None:
    with pytest.raises(CaseFileError, match="not a duration"):
        parse_duration_ms(text, path="suite.yml", line=4)


# --- select_cases ----------------------------------------------------------------------------------------------


def _case(cid: str, *tags: str) -> Case:
    return Case(id=cid, question="q?", gold_sql=("SELECT 1",), db="d", tags=tags)


CASES = [
    _case("shop-ads-1", "ads"),
    _case("shop-ads-2", "ads", "slow"),
    _case("shop-orders", "orders"),
    _case("hr-1"),
]


def _ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def test_select_without_filters_keeps_everything_in_order() -> None:
    assert _ids(select_cases(CASES)) == ["shop-ads-1", "shop-ads-2", "shop-orders", "hr-1"]


def test_select_by_tags_is_any_match() -> None:
    assert _ids(select_cases(CASES, tags=["slow", "orders"])) == ["shop-ads-2", "shop-orders"]
    assert select_cases(CASES, tags=["none-such"]) == []


def test_select_by_id_takes_exact_ids_and_globs() -> None:
    assert _ids(select_cases(CASES, ids=["shop-ads-*"])) == ["shop-ads-1", "shop-ads-2"]
    assert _ids(select_cases(CASES, ids=["hr-1", "shop-orders"])) == ["shop-orders", "hr-1"]
    assert _ids(select_cases(CASES, ids=["shop-ads-?"])) == ["shop-ads-1", "shop-ads-2"]
    assert select_cases(CASES, ids=["shop"]) == []  # not a prefix match


def test_select_by_tags_and_ids_needs_both() -> None:
    assert _ids(select_cases(CASES, tags=["ads"], ids=["*-2", "shop-orders"])) == ["shop-ads-2"]


def test_unknown_preset_in_a_case_is_refused_at_load_time(tmp_path: Path) -> None:
    (tmp_path / "s.sql").write_text("SELECT 1;")
    suite = tmp_path / "suite.yml"
    suite.write_text(
        "databases: {d: s.sql}\ncases:\n  - id: p\n    question: q?\n    gold_sql: SELECT 1\n"
        "    compare: {preset: bird2}\n"
    )
    err = _load_error_at(suite)
    assert err.case_id == "p" and "bird2" in str(err)


# --- defog's {a,b} column choices, directly ---------------------------------------------------------------------


def test_choices_leave_braces_in_strings_and_comments_alone() -> None:
    sql = "SELECT '{1,2}'::int[] AS a, \"{x}\" FROM t -- {c, d}\n/* {e, f} */"
    assert expand_column_choices(sql) == [sql]


def test_choices_link_an_empty_group_to_the_one_before() -> None:
    assert expand_column_choices("SELECT {a, b} FROM t GROUP BY {}") == [
        "SELECT a FROM t GROUP BY a",
        "SELECT b FROM t GROUP BY b",
        "SELECT a, b FROM t GROUP BY a, b",
    ]


def test_choices_keep_function_calls_whole() -> None:
    assert expand_column_choices("SELECT {a, coalesce(b, 0)} FROM t")[1] == "SELECT coalesce(b, 0) FROM t"


@pytest.mark.parametrize("sql", ['SELECT $${"a": 1, "b": 2}$$::jsonb', "SELECT E'it\\'s {x, y}'"])
def test_choices_leave_braces_in_dollar_quotes_and_escape_strings_alone(sql: str) -> None:
    assert expand_column_choices(sql) == [sql]


def test_a_query_gold_of_two_statements_is_refused_or_split(tmp_path: Path) -> None:
    (tmp_path / "s.sql").write_text("SELECT 1;")
    suite = tmp_path / "suite.yml"
    suite.write_text(
        'databases: {d: s.sql}\ncases:\n  - id: two\n    question: q?\n    gold_sql: "SELECT 1; SELECT 2"\n'
    )
    try:
        gold = load_suite(suite).case("two").gold_sql
    except CaseFileError as exc:
        assert exc.case_id == "two"
    else:
        assert len(gold) == 2
