"""The defog and BIRD-CRITIC importers: what they write, what they skip, and what they refuse (no database)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from bot.base.errors import CaseFileError
from bot.base.yamlread import load_yaml_text
from bot.cases.importers import ImportReport, import_bird_critic, import_defog
from bot.cases.importers.bird_critic import find_dump
from bot.cases.importers.common import IMPORT_MARKER, dump_yaml, join_statements, split_statements
from bot.cases.importers.writes import find_write_targets, table_checks
from bot.cases.loader import load_suite

HERE = Path(__file__).resolve()
SHARED = Path(os.environ.get("SQLCANARY_SHARED") or HERE.parents[2].parent / "shared")
DEFOG = SHARED / "datasets" / "defog"
BIRD = HERE.parents[1] / "fixtures" / "bird_critic"
BIRD_JSONL = BIRD / "instances.jsonl"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- defog, the published data ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def defog_import(tmp_path_factory: pytest.TempPathFactory) -> ImportReport:
    if not (DEFOG / "questions").is_dir():
        pytest.skip(f"defog data not found at {DEFOG} (set SQLCANARY_SHARED to the shared/ folder)")
    return import_defog(DEFOG, tmp_path_factory.mktemp("defog") / "suite")


@pytest.fixture(scope="module")
def defog_published() -> dict[str, dict]:
    return {row["id"]: row for row in _jsonl(DEFOG / "cases.jsonl")}


def test_defog_imports_all_419_cases_with_the_published_ids(defog_import, defog_published):
    suite = load_suite(defog_import.suite_dir)
    assert defog_import.cases == len(suite.cases) == 419
    assert sorted(c.id for c in suite.cases) == sorted(defog_published)
    assert defog_import.skipped == ()
    assert defog_import.warnings == ()
    assert set(defog_import.databases) == {row["db"] for row in defog_published.values()}


def test_defog_gold_expands_to_the_published_variants(defog_import, defog_published):
    suite = load_suite(defog_import.suite_dir)
    mismatched = [c.id for c in suite.cases if list(c.gold_sql) != defog_published[c.id]["gold_sql_variants"]]
    assert mismatched == []


def test_defog_text_round_trips_exactly(defog_import, defog_published):
    suite = load_suite(defog_import.suite_dir)
    for case in suite.cases:
        row = defog_published[case.id]
        assert (case.question, case.instructions, case.db) == (
            row["question"],
            row["instructions"],
            row["db"],
        )
        assert case.category == "query"
    assert any("\r\n" in c.instructions for c in suite.cases)  # CSV fields with CRLF survive YAML


def test_defog_tags_and_suite_defaults(defog_import, defog_published):
    suite = load_suite(defog_import.suite_dir)
    case = suite.case("questions_gen_postgres:0")
    assert case.tags[:3] == ("questions_gen_postgres", "academic", "category:group_by")
    assert case.compare.columns == "subset"
    dated = {c.id for c in suite.cases if "date-relative" in c.tags}
    assert dated == {i for i, row in defog_published.items() if row["date_relative"]}
    text = (defog_import.suite_dir / "suite.yml").read_text()
    assert "CURRENT_DATE" in text and "subset" in text
    assert sorted(p.name for p in (defog_import.suite_dir / "fixtures").iterdir()) == [
        f"{db}.sql" for db in sorted(defog_import.databases)
    ]


# --- defog, small synthetic layouts ----------------------------------------------------------------------------


def _defog_src(tmp_path: Path, csv_text: str, *, dbs: tuple[str, ...] = ("shop",)) -> Path:
    src = tmp_path / "defog"
    (src / "questions").mkdir(parents=True)
    (src / "db").mkdir()
    (src / "questions" / "idk.csv").write_text(csv_text, encoding="utf-8")
    for db in dbs:
        (src / "db" / f"{db}.sql").write_text("CREATE TABLE t (a int);\n", encoding="utf-8")
    return src


CSV_HEADER = "question,query,db_name,query_category,instructions\n"


def test_defog_skips_rows_without_a_query_and_names_their_line(tmp_path):
    csv_text = CSV_HEADER + (
        '"A question\nover two lines",SELECT a FROM t;SELECT {a} FROM t,shop,cat_a,\n'
        "Unanswerable?,,shop,cat_b,\n"
        "Another,SELECT 1,shop,cat_a,be brief\n"
    )
    report = import_defog(_defog_src(tmp_path, csv_text), tmp_path / "out")
    assert report.cases == 2
    assert report.skipped == ("idk:1",)
    assert report.warnings == ("idk.csv:4: skipped idk:1: empty query (no gold to judge against)",)
    suite = load_suite(tmp_path / "out")
    assert suite.case("idk:0").gold_sql == ("SELECT a FROM t", "SELECT a FROM t")
    assert suite.case("idk:2").instructions == "be brief"


def test_defog_missing_dump_names_the_csv_line(tmp_path):
    csv_text = CSV_HEADER + "Q1,SELECT 1,shop,c,\nQ2,SELECT 2,warehouse,c,\n"
    with pytest.raises(CaseFileError) as err:
        import_defog(_defog_src(tmp_path, csv_text), tmp_path / "out")
    assert (err.value.line, err.value.case_id) == (3, "idk:1")
    assert "warehouse" in str(err.value) and "idk.csv:3" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_defog_missing_column_is_an_error_on_line_1(tmp_path):
    with pytest.raises(CaseFileError) as err:
        import_defog(_defog_src(tmp_path, "question,db_name\nQ,shop\n"), tmp_path / "out")
    assert err.value.line == 1 and "'query'" in err.value.message


def test_defog_cross_check_reports_disagreements(tmp_path):
    src = _defog_src(tmp_path, CSV_HEADER + "Q1,SELECT 1,shop,c,\n")
    rows = [
        {"id": "idk:0", "db": "shop", "question": "Other"},
        {"id": "idk:9", "db": "shop", "question": "Q"},
    ]
    (src / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = import_defog(src, tmp_path / "out")
    assert any("cases.jsonl:1: question of idk:0 differs" in w for w in report.warnings)
    assert any("only in cases.jsonl: idk:9" in w for w in report.warnings)


# --- BIRD-CRITIC ----------------------------------------------------------------------------------------------


@pytest.fixture
def bird(tmp_path) -> ImportReport:
    return import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=tmp_path / "bird")


def test_bird_critic_maps_each_field(bird):
    suite = load_suite(bird.suite_dir)
    source = {str(r["instance_id"]): r for r in _jsonl(BIRD_JSONL)}
    assert bird.cases == len(suite.cases) == 7
    assert bird.databases == ("school", "shop")
    for case in suite.cases:
        row = source[case.id]
        assert case.question == row["query"]
        assert case.db == row["db_id"]
        assert case.category == row["category"].lower()
        assert case.setup_sql == tuple(row["preprocess_sql"])
        assert case.teardown_sql == tuple(row["clean_up_sql"])
        assert case.tags[:2] == (row["db_id"], row["category"].lower())
    assert suite.case("0").gold_sql == (source["0"]["sol_sql"][0].rstrip(";"),)
    # two sol_sql statements are one gold script, not two alternatives
    assert suite.case("1").gold_sql == (
        "UPDATE products SET price = price * 1.1 WHERE category = 'toys';\n"
        "DELETE FROM orders WHERE status = 'cancelled'",
    )
    assert suite.databases["school"] == (
        bird.suite_dir.resolve() / "fixtures/school/01_schema.sql",
        bird.suite_dir.resolve() / "fixtures/school/02_data.sql",
    )


def test_bird_critic_management_checks_follow_the_written_tables(bird):
    suite = load_suite(bird.suite_dir)
    assert [(c.sql, c.expect) for c in suite.case("1").checks] == [
        ("SELECT * FROM products ORDER BY 1", "gold"),
        ("SELECT * FROM orders ORDER BY 1", "gold"),
    ]
    honor, dropped = suite.case("2").checks
    assert honor.sql == "SELECT * FROM honor_roll ORDER BY 1"
    assert "information_schema.tables" in dropped.sql and "'old_grades'" in dropped.sql
    assert suite.case("7").checks == ()
    assert any(w.startswith("instances.jsonl:8: instance 7: no table written") for w in bird.warnings)
    assert suite.case("0").checks == () and suite.case("5").checks == ()


def test_bird_critic_efficiency_cases(bird):
    suite = load_suite(bird.suite_dir)
    rewrite, index = suite.case("3"), suite.case("4")
    assert rewrite.efficiency.reference_sql.startswith("SELECT s.name, (SELECT g.course")
    assert rewrite.efficiency.explain_sql is None and rewrite.efficiency.threshold == 0.0
    assert "efficiency" in rewrite.tags
    # a solution that only adds an index: the issue query is measured again after the prediction ran
    assert index.efficiency.explain_sql == "SELECT * FROM orders WHERE status = 'pending'"
    assert not index.read_only


def test_bird_critic_reports_skips_and_test_cases(bird):
    assert bird.skipped == ("6",)
    assert "instances.jsonl:7: instance 6: skipped: no sol_sql (no gold to judge against)" in bird.warnings
    assert any("2 instance(s) carry Python test_cases" in w and w.endswith(": 0, 7") for w in bird.warnings)


def test_bird_critic_missing_dump_names_line_and_db(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    shutil.copy(BIRD / "dumps" / "shop.sql", dumps / "shop.sql")
    with pytest.raises(CaseFileError) as err:
        import_bird_critic(BIRD_JSONL, db_dir=dumps, out=tmp_path / "out")
    assert err.value.line == 3 and "'school'" in err.value.message
    assert str(err.value).startswith(f"{BIRD_JSONL}:3 (case 2)")
    assert not (tmp_path / "out").exists()


def test_bird_critic_malformed_line_names_the_line(tmp_path):
    lines = BIRD_JSONL.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], "", '{"instance_id": 9, "db_id": "shop",', *lines[1:]]) + "\n")
    with pytest.raises(CaseFileError) as err:
        import_bird_critic(bad, db_dir=BIRD / "dumps", out=tmp_path / "out")
    assert err.value.line == 3 and err.value.message.startswith("not JSON")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"category": "Chitchat"}, "unknown category"),
        ({"sol_sql": [1]}, "sol_sql must be a list of SQL strings"),
        ({"db_id": "shop; drop"}, "not a plain identifier"),
        ({"instance_id": 1}, "duplicate instance_id (first on line 2)"),
    ],
)
def test_bird_critic_bad_instance_is_an_error_on_its_line(tmp_path, patch, message):
    rows = _jsonl(BIRD_JSONL)
    rows[3] = {**rows[3], **patch}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CaseFileError) as err:
        import_bird_critic(bad, db_dir=BIRD / "dumps", out=tmp_path / "out")
    assert err.value.line == 4 and message in err.value.message


def test_bird_critic_older_field_names_inferred_categories_and_skips(tmp_path):
    rows = [
        {
            "instance_id": "a",
            "selected_database": "shop",
            "query": "q",
            "error_sql": "SELECT 1",
            "sol_sql": "SELECT 2",
        },
        {"instance_id": "b", "db_id": "shop", "query": "q", "sol_sql": ["ALTER TYPE mood ADD VALUE 'meh'"]},
        {"instance_id": "c", "db_id": "shop", "query": "q", "sol_sql": ["SELECT 1"], "language": "MySQL"},
        {"instance_id": "d", "db_id": "shop", "query": "q", "sol_sql": ["SELEC broken FROM"]},
        {
            "instance_id": "e",
            "db_id": "shop",
            "query": "q",
            "category": "Query",
            "sol_sql": ["DELETE FROM orders"],
        },
    ]
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = import_bird_critic(jsonl, db_dir=BIRD / "dumps", out=tmp_path / "out")
    suite = load_suite(report.suite_dir)
    assert (suite.case("a").category, suite.case("a").gold_sql) == ("query", ("SELECT 2",))
    assert suite.case("b").category == "management"
    assert report.skipped == ("c", "d")
    assert "t.jsonl:3: instance c: skipped: written for MySQL, not PostgreSQL" in report.warnings
    assert any(
        w.startswith("t.jsonl:4: instance d: skipped: sol_sql does not parse") for w in report.warnings
    )
    assert any(w.startswith("t.jsonl:2: instance b: no table written") for w in report.warnings)
    assert (
        "t.jsonl:5: instance e: category query is run read-only, but sol_sql changes orders"
        in report.warnings
    )


def test_find_dump_accepts_three_layouts(tmp_path):
    (tmp_path / "flat.sql").write_text("")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "nested.sql").write_text("")
    (tmp_path / "nested" / "extra.sql").write_text("")
    (tmp_path / "split").mkdir()
    for name in ("b_data.sql", "a_schema.sql", "notes.txt"):
        (tmp_path / "split" / name).write_text("")
    assert find_dump(tmp_path, "flat") == (tmp_path / "flat.sql",)
    assert find_dump(tmp_path, "nested") == (tmp_path / "nested" / "nested.sql",)
    assert find_dump(tmp_path, "split") == (
        tmp_path / "split" / "a_schema.sql",
        tmp_path / "split" / "b_data.sql",
    )
    assert find_dump(tmp_path, "absent") == ()


# --- the output folder ----------------------------------------------------------------------------------------


def test_refuses_a_foreign_non_empty_out_dir(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(CaseFileError) as err:
        import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=out)
    assert "not an earlier import" in err.value.message
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_replaces_an_earlier_import_and_an_empty_dir(tmp_path):
    out = tmp_path / "suite"
    out.mkdir()
    import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=out)
    (out / "cases" / "stale.yml").write_text("- {id: stale, question: q, gold_sql: SELECT 1, db: shop}\n")
    report = import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=out)
    assert not (out / "cases" / "stale.yml").exists()
    assert json.loads((out / IMPORT_MARKER).read_text())["importer"] == "bird-critic"
    assert len(load_suite(out).cases) == report.cases == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite"]


def test_a_failed_import_leaves_the_earlier_suite_untouched(tmp_path):
    out = tmp_path / "suite"
    import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(CaseFileError):
        import_bird_critic(BIRD_JSONL, db_dir=tmp_path / "no-dumps-here", out=out)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(BIRD_JSONL.read_text().replace('"db_id": "school"', '"db_id": "college"', 1))
    with pytest.raises(CaseFileError):
        import_bird_critic(bad, db_dir=BIRD / "dumps", out=out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "suite"]


def test_a_failure_midway_leaves_no_half_written_suite(tmp_path, monkeypatch):
    out = tmp_path / "suite"
    import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=out)
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))

    def broken_copy(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("bot.cases.importers.common.shutil.copyfile", broken_copy)
    with pytest.raises(CaseFileError, match="No space left"):
        import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=out)
    with pytest.raises(CaseFileError):
        import_bird_critic(BIRD_JSONL, db_dir=BIRD / "dumps", out=tmp_path / "fresh")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite"]


# --- helpers --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "written", "dropped"),
    [
        ("INSERT INTO s.T (a) VALUES (1)", ["s.T"], []),
        ('UPDATE "Foo" f SET a = 1 FROM bar WHERE f.x = bar.x', ['"Foo"'], []),
        ("DELETE FROM t USING u WHERE t.a = u.a", ["t"], []),
        ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET a = s.a", ["t"], []),
        ("TRUNCATE t1, t2", ["t1", "t2"], []),
        ("WITH d AS (DELETE FROM q RETURNING *) SELECT * FROM d", ["q"], []),
        ("ALTER TABLE z ADD COLUMN c int", ["z"], []),
        ("ALTER TABLE z RENAME TO w", ["w"], ["z"]),
        ("DROP TABLE IF EXISTS a, s.b", [], ["a", "s.b"]),
        ("INSERT INTO a VALUES (1); DROP TABLE a; CREATE TABLE a (x int)", ["a"], []),
        ("CREATE INDEX i ON t (a)", [], []),
        ("SELECT * FROM t", [], []),
    ],
)
def test_write_targets(sql, written, dropped):
    targets = find_write_targets([sql])
    assert [r.sql for r in targets.written] == written
    assert [r.sql for r in targets.dropped] == dropped


def test_drop_check_folds_unquoted_names_and_keeps_the_schema():
    (check,) = table_checks(find_write_targets(["DROP TABLE Sales.Old_Rows"]))
    assert "table_name = 'old_rows' AND table_schema = 'sales'" in check["sql"]


def test_split_statements_ignores_semicolons_in_quotes_and_comments():
    sql = "SELECT ';' AS a; SELECT $$;$$;; -- x;\nSELECT 1 /* ; */; SELECT $t$ ; $t$, $1;  "
    assert split_statements(sql) == [
        "SELECT ';' AS a",
        "SELECT $$;$$",
        "-- x;\nSELECT 1 /* ; */",
        "SELECT $t$ ; $t$, $1",
    ]


def test_join_statements_keeps_a_trailing_comment_out_of_the_way():
    assert (
        join_statements(["SELECT 1;", "SELECT 2 -- two", "SELECT 3;"])
        == "SELECT 1;\nSELECT 2 -- two\n;\nSELECT 3"
    )


@pytest.mark.parametrize(
    "text",
    [
        "a: b",
        "x\n  y",
        "trailing \nspace",
        "{a,b}",
        "'q'",
        "l1\r\nl2",
        "tab\tx\ny",
        "yes",
        "2024-01-01",
        "  lead\ny",
        "end\n\n",
        "",
        "~",
        "\ufeffbom",
    ],
)
def test_dump_yaml_round_trips_through_the_case_loader(text):
    data = [{"id": "x", "sql": text, "list": [text]}]
    assert load_yaml_text(dump_yaml(data), "t.yml") == data
    assert yaml.safe_load(dump_yaml(data)) == data
