"""`sqlcanary audit` on the public defog golds (../shared; skipped with a reason when absent): every gold is
audited, and the flags stay within the false-flag budget of 5% of the golds (README: the by-hand classification
of each flag)."""

from __future__ import annotations

import json

import pytest

from bot.cli import main

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def defog_suite(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("defog") / "suite"
    assert main(["import", "defog", str(shared / "datasets/defog"), "--out", str(out)]) == 0
    return out


def test_defog_golds_are_audited_within_the_flag_budget(defog_suite, pg_dsn, tmp_path):
    out = tmp_path / "audit.json"
    assert (
        main(["audit", str(defog_suite), "--dsn", pg_dsn, "-q", "--format", "json", "--out", str(out)]) == 0
    )
    report = json.loads(out.read_text())
    assert report["audited"] == 419
    flagged = {s["case_id"] for s in report["suspects"]}
    assert len(flagged) <= 0.05 * report["audited"], sorted(flagged)
    # the known tie: three drugs share the highest count of adverse events, and LIMIT 1 keeps one of them
    assert "instruct_advanced_postgres:41" in flagged


def test_defog_alternatives_split_by_perturbed_copies_stay_within_the_budget(defog_suite, pg_dsn, tmp_path):
    """`--perturb 3`: alternatives that agree on the real data but not on a copy (README: each classified)."""
    out = tmp_path / "audit.json"
    argv = ["audit", str(defog_suite), "--dsn", pg_dsn, "-q", "--format", "json", "--out", str(out)]
    assert main([*argv, "--perturb", "3"]) == 0
    report = json.loads(out.read_text())
    assert len({s["case_id"] for s in report["suspects"]}) <= 0.05 * report["audited"]
    perturbed = {s["case_id"] for s in report["suspects"] if s["kind"] == "gold_fails_on_perturbed"}
    # "courses offered for each semester id": grouping course_offering.semester vs semester LEFT JOIN offerings
    assert "questions_gen_postgres:34" in perturbed
    assert all(
        s["evidence"]["copy"] >= 1 for s in report["suspects"] if s["kind"] == "gold_fails_on_perturbed"
    )
