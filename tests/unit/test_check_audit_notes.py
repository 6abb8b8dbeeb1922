"""The comment's one note about suspect golds a change adds or edits (bot.check.audit_child.audit_notes)."""

from __future__ import annotations

from bot.audit.model import AuditReport, Suspect
from bot.check.audit_child import audit_notes


def suspect(case_id: str, kind: str, confidence: str = "high", message: str = "m") -> Suspect:
    return Suspect(case_id=case_id, kind=kind, confidence=confidence, message=message, evidence={})


def test_nothing_suspect_gives_no_note():
    assert audit_notes(AuditReport(suite="s", audited=3)) == ()


def test_one_note_names_each_case_by_its_likeliest_suspect_and_leaves_hints_out():
    report = AuditReport(
        suite="s",
        suspects=(
            suspect("a", "empty_result", "medium", "no rows"),
            suspect("a", "unknown_literal", "high", "'paris' is stored as 'Paris'"),
            suspect("b", "llm_hint", "low", "hint: mismatch"),
        ),
    )
    (note,) = audit_notes(report)
    assert "`a` (unknown literal: 'paris' is stored as 'Paris')" in note
    assert "`b`" not in note and "hint" not in note
    assert note.startswith("suspect gold among")


def test_past_five_cases_the_rest_are_counted():
    report = AuditReport(suite="s", suspects=tuple(suspect(f"c{i}", "empty_result") for i in range(8)))
    (note,) = audit_notes(report)
    assert note.startswith("suspect golds among") and "`c4`" in note and "`c5`" not in note
    assert "and 3 more" in note
