"""A check audits the golds a pull request adds or edits (bot.check.audit_child, issue 28): each suspect gold is
one note on the comment, its evidence in `audit.json` beside the runs; a change that touches no case audits
nothing. Through `action(...)` as in test_trust_boundary.py (a bare remote, real PostgreSQL, the fake GitHub)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.integration import test_trust_boundary as trust
from tests.support.tinyrepo import CASES_YML, GOOD

pytestmark = pytest.mark.integration

repo = trust.repo  # the fixture: `main` on a bare remote
attack, check_pr = trust.attack, trust.check_pr

ATLANTIS = "SELECT name FROM customers WHERE city = 'paris'"  # no row: the stored city is 'Paris'


def test_a_suspect_gold_the_change_adds_is_one_note_with_its_evidence_beside(repo, fake, capsys):
    cases = yaml.safe_load(CASES_YML) + [
        {"id": "in_paris", "question": "Who lives in Paris?", "gold_sql": ATLANTIS}
    ]
    files = {
        "evals/suite/cases/all.yml": yaml.safe_dump(cases, sort_keys=False),
        "data/answers.json": json.dumps(GOOD | {"in_paris": ATLANTIS}),
    }
    sha = attack(repo, "suspect", files)
    _, result = check_pr(repo, fake, "suspect", sha, capsys)
    (note,) = [w for w in result["comparison"]["warnings"] if w.startswith("suspect gold")]
    assert "`in_paris` (" in note and "audit.json" in note
    audit = json.loads((result["out"] / "audit.json").read_text())
    assert audit["audited"] == 1  # the added case alone
    literal = [s for s in audit["suspects"] if s["kind"] == "unknown_literal"]
    assert literal and literal[0]["evidence"]["nearest"][0] == "Paris"
    assert "suspect gold" in (result["out"] / "comment.md").read_text()


def test_a_change_that_touches_no_case_audits_nothing(repo, fake, capsys):
    sha = attack(repo, "answers", {})
    _, result = check_pr(repo, fake, "answers", sha, capsys)
    assert not (result["out"] / "audit.json").exists()
    assert not any(w.startswith("suspect gold") for w in result["comparison"]["warnings"])
