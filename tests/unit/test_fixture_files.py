"""A run loads a fixture's bytes only when they are the bytes its suite's loader read (bot.base.fixture_files)."""

from __future__ import annotations

import pytest

from bot.base.errors import CaseFileError
from bot.base.fixture_files import digest, read_fixtures
from bot.cases.loader import load_suite


def suite_folder(tmp_path, fixture: str = "CREATE TABLE t (x int);\n"):
    (tmp_path / "shop.sql").write_text(fixture)
    (tmp_path / "suite.yml").write_text(
        "databases:\n  shop: shop.sql\ncases:\n  - {id: a, question: q, gold_sql: SELECT 1}\n"
    )
    return tmp_path


def test_the_loader_keeps_each_fixtures_digest_and_the_run_reads_those_bytes(tmp_path):
    suite = load_suite(suite_folder(tmp_path))
    (fixture,) = suite.fixtures("shop")
    assert fixture.text() == "CREATE TABLE t (x int);\n"
    assert suite.fixture_digests == {str((tmp_path / "shop.sql").resolve()): digest(fixture.data)}


def test_a_fixture_that_reads_otherwise_than_the_loader_read_it_is_refused(tmp_path):
    suite = load_suite(suite_folder(tmp_path))
    (tmp_path / "shop.sql").write_text("DROP TABLE t;\n")
    with pytest.raises(CaseFileError, match="not what the suite's loader read") as info:
        suite.fixtures("shop")
    assert info.value.path == str((tmp_path / "shop.sql").resolve())


def test_a_fixture_the_loader_never_read_is_refused(tmp_path):
    path = tmp_path / "x.sql"
    path.write_text("SELECT 1;")
    with pytest.raises(CaseFileError, match="not one the suite's loader read"):
        read_fixtures([path], {})


def test_a_fixture_that_is_not_a_file_names_the_suite_line(tmp_path):
    folder = suite_folder(tmp_path)
    (folder / "shop.sql").unlink()
    (folder / "shop.sql").mkdir()  # exists, but no file to read
    with pytest.raises(CaseFileError) as info:
        load_suite(folder)
    assert info.value.path == str(folder / "suite.yml") and info.value.line == 2
