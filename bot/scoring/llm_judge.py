"""An optional LLM judge of structural equivalence (off by default; one LLM call per case).

Not wired into the runner. To use it: build one `LLMClient(config.llm)` per run and, where the runner adds the
`structural` verdict (`bot.run.case_judge.judge_answer`), add
`verdicts["llm_judge"] = llm_judge_verdict(client, case.question, case.gold_sql[0], answer.sql)` behind a
`--llm-judge` flag. Like `structural`, it is a diagnostic: it never decides pass or fail, and an LLM failure
gives an undecided verdict (match=None), never a wrong one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.base.results import Verdict
from bot.llm.errors import LLMError

if TYPE_CHECKING:
    from bot.llm.client import LLMClient

SCORER = "llm_judge"
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "equivalent": {"type": "boolean"},
        "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
        "reason": {"type": "string"},
    },
    "required": ["equivalent", "reason"],
}


def judge_messages(question: str, gold_sql: str, pred_sql: str) -> list[dict[str, str]]:
    from bot.base.templating import environment

    text = (
        environment()
        .get_template("prompts/judge.md.j2")
        .render(question=question, gold_sql=gold_sql.strip(), pred_sql=pred_sql.strip())
    )
    return [
        {"role": "system", "content": "You are a careful PostgreSQL reviewer. You answer in JSON only."},
        {"role": "user", "content": text},
    ]


def llm_judge_verdict(client: LLMClient, question: str, gold_sql: str, pred_sql: str) -> Verdict:
    """match True/False from the model; None (undecided) when the LLM fails or answers nonsense."""
    try:
        reply = client.complete_json(
            judge_messages(question, gold_sql, pred_sql),
            schema=JUDGE_SCHEMA,
            required=("equivalent", "reason"),
            purpose="llm_judge",
        )
    except LLMError as exc:
        return Verdict(scorer=SCORER, match=None, kind="llm_error", message=str(exc)[:500])
    equivalent = reply.data["equivalent"]
    confidence = reply.data.get("confidence")
    confidence = confidence if confidence in ("high", "medium", "low") else "unknown"
    return Verdict(
        scorer=SCORER,
        match=bool(equivalent),
        kind="equivalent" if equivalent else "different",
        flags=(f"confidence_{confidence}",) + (("cached",) if reply.cached else ()),
        message=str(reply.data["reason"])[:1000],
        details={"calls": reply.usage.calls, "parse_repaired": reply.parse_repaired},
    )
