"""The audit's hints (`--llm`): listed like suspects, labelled as hints, never counted by `--strict`; and the
prompt the LLM is asked with."""

from __future__ import annotations

from bot.audit.llm_hint import hint_messages
from bot.audit.model import KINDS, AuditReport, Suspect
from bot.audit.render import as_text
from bot.base.results import ResultSet
from bot.cases.model import Case


def _suspect(kind: str, confidence: str = "low") -> Suspect:
    return Suspect(case_id="c1", kind=kind, confidence=confidence, message="m", evidence={})  # type: ignore[arg-type]


def test_new_kinds_are_listed_last_in_order():
    assert KINDS[-2:] == ("gold_fails_on_perturbed", "llm_hint")


def test_strict_ignores_hints_only():
    assert not AuditReport(suite="s", suspects=(_suspect("llm_hint"),), audited=1).strict_exit()
    both = (_suspect("llm_hint"), _suspect("gold_fails_on_perturbed", "medium"))
    assert AuditReport(suite="s", suspects=both, audited=1).strict_exit()


def test_text_says_how_many_are_hints():
    text = as_text(AuditReport(suite="s", suspects=(_suspect("llm_hint"),), audited=3))
    assert (
        "c1: llm_hint [low]" in text and "1 of them LLM hint(s)" in text and "--strict does not count" in text
    )


def test_the_prompt_has_the_question_the_gold_and_its_first_rows():
    case = Case(
        id="c1", question="Who is oldest?", gold_sql=("SELECT name FROM p ORDER BY age LIMIT 1",), db="d"
    )
    result = ResultSet(columns=("name",), type_oids=(25,), rows=[(f"n{i}",) for i in range(9)])
    user = hint_messages(case, result)[1]["content"]
    assert "Who is oldest?" in user and "ORDER BY age LIMIT 1" in user
    assert "9 row(s)" in user and '"n4"' in user and '"n5"' not in user
