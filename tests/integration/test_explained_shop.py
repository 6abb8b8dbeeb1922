"""Every planted regression of the shop example, explained truly: for each case it breaks that fails on the
execution scorer, the first difference names a value that really differs between aligned rows.

The test does not trust the scorer's own rows: it re-runs the gold and the predicted SQL on a fresh working
database, finds the rows by the key the message names, and checks that the values the message shows are those
rows' values and differ (or that the row called missing or extra really is)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.base.results import CaseResult, ResultSet, read_run
from bot.cases.loader import load_suite
from bot.cli import main
from bot.db.session import Session
from bot.db.templates import working_databases
from bot.scoring.values import close, normalize_rows, show

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
REGRESSIONS = sorted(p.stem for p in (SHOP / "regressions").glob("*.yml"))
KEY_WIDTH = 30  # how firstdiff shows a key value


@pytest.fixture(scope="module")
def shop_session(pg_server):
    """A fresh working copy of the shop database, read through the restricted role as a run does."""
    suite = load_suite(SHOP)
    with working_databases(pg_server, {db: suite.fixtures(db) for db in suite.databases}) as dbs:
        session = Session(dbs["shop"].dsn, statement_timeout_ms=30_000, row_cap=10_000)
        yield session
        session.close()


def fetch(session: Session, sql: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """(column names, rows normalised as the comparison normalises them)."""
    session.begin(read_only=True)
    try:
        out = session.fetch(sql)
    finally:
        session.rollback()
    assert out.ok, out.error
    result: ResultSet | None = out.result
    assert result is not None and not result.truncated
    return result.columns, normalize_rows(result.rows, result.type_oids)


def planted_run(name: str, tmp_path: Path, dsn: str) -> tuple[dict, list[CaseResult], dict[str, list[str]]]:
    suite = tmp_path / "shop"
    shutil.copytree(SHOP, suite, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = yaml.safe_load((suite / "regressions" / f"{name}.yml").read_text())
    done = subprocess.run(
        [sys.executable, str(suite / "regressions" / "apply.py"), name, "--kb", str(suite / "kb")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids = [arg for case_id in manifest["breaks"] for arg in ("--id", case_id)]
    out = tmp_path / "run.json"
    assert main(["run", str(suite), "--dsn", dsn, "--out", str(out), "-q", *ids]) == 0
    golds = {c.id: list(c.gold_sql) for c in load_suite(suite).cases}
    return manifest, list(read_run(out).cases), golds


def rows_with(rows: list[tuple[Any, ...]], named: dict[int, str]) -> list[tuple[Any, ...]]:
    """The rows whose values at these gold positions show as the message shows them."""
    return [r for r in rows if all(show(r[i], KEY_WIDTH) == shown for i, shown in named.items())]


def check_first_difference(case: CaseResult, gold_sql: str, session: Session) -> str:
    """Checks the case's first difference against the rows themselves; returns the changed column's name."""
    verdict = case.verdicts["execution"]
    first = verdict.details["first_difference"]
    assert case.prediction.sql
    columns, gold = fetch(session, gold_sql)
    pred_columns, pred = fetch(session, case.prediction.sql)
    assert len(pred_columns) == len(columns)  # the shop's predictions keep the gold's column order
    assert (len(gold), len(pred)) == (verdict.details["gold_rows"], verdict.details["pred_rows"])
    key = dict(zip(first["key_positions"], first["key"].values(), strict=True))
    for name, shown in first["key"].items():
        assert f"{name}={shown}" in verdict.message
    if first["kind"] == "changed":
        g_rows, p_rows = rows_with(gold, key), rows_with(pred, key)
        assert len(g_rows) == 1 and len(p_rows) == 1, (case.id, first)  # the key names one row on each side
        col = first["position"]
        g_value, p_value = g_rows[0][col], p_rows[0][col]
        assert (show(g_value), show(p_value)) == (first["gold"], first["prediction"]), case.id
        assert not close(g_value, p_value, abs_tol=1e-9, rel_tol=1e-6), case.id
        assert f"gold {first['gold']}, prediction {first['prediction']}" in verdict.message
        return columns[col]
    ours, theirs = (gold, pred) if first["kind"] == "missing" else (pred, gold)
    assert rows_with(ours, key), (case.id, first)
    if "copies" in first:  # a whole row on both sides, more often on one
        assert first["copies"] == [len(rows_with(gold, key)), len(rows_with(pred, key))], (case.id, first)
        return ""
    assert rows_with(theirs, key) == [], (case.id, first)  # no row with that key on the other side
    if first["row"]:  # the other values are the row's
        others = [i for i in range(len(columns)) if i not in key]
        shown_row = {i: show(rows_with(ours, key)[0][i]) for i in others}
        assert list(shown_row.values()) == list(first["row"].values()), (case.id, first)
    return ""


@pytest.mark.parametrize("name", REGRESSIONS)
def test_each_broken_case_names_a_real_difference(
    name: str, pg_dsn: str, tmp_path: Path, shop_session
) -> None:
    manifest, cases, golds = planted_run(name, tmp_path, pg_dsn)
    by_id = {c.id: c for c in cases}
    assert set(manifest["breaks"]) <= set(by_id)
    explained = []
    for case_id in manifest["breaks"]:
        case = by_id[case_id]
        verdict = case.verdicts.get("execution")
        if case.status != "failed" or verdict is None or verdict.match is not False:
            continue  # e.g. a management case that fails on its checks
        assert verdict.kind == "mismatch", (case_id, verdict)
        if "first_difference" not in verdict.details:
            pytest.fail(f"{case_id}: no first difference in {verdict.message!r}")
        gold_sql = golds[case_id][verdict.details.get("alternative", 0)]
        explained.append((case_id, check_first_difference(case, gold_sql, shop_session)))
    assert explained, f"{name}: no case failed on the execution scorer"
    if name == "cpc_wrong_denominator":
        # The CPC value (spend / clicks, an unnamed column) differs, aligned by region; never region codes.
        assert explained == [("shop-ads-cpc-by-region-q4", "?column?")]
        message = by_id["shop-ads-cpc-by-region-q4"].verdicts["execution"].message
        assert message.startswith("10 of 10 rows differ; `?column?` for (region_code='")
