"""`llm_hint` (`sqlcanary audit --llm`): the configured LLM (the config's `llm:`, through bot.llm's client, its
cache, budget and retries) is asked whether each question and its gold SQL match. A mismatch is a hint, with low
confidence: an opinion, not evidence from the data, never counted by `--strict` (bot.audit.model.HINT_KINDS).
When the LLM cannot be used for a case (unusable JSON after the client's re-ask, 429s past its retries, the
budget spent), the audit stops with an LLM error naming the case (exit 2)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bot.audit.context import CaseAudit
from bot.audit.model import Suspect, plain_rows
from bot.base.results import ResultSet
from bot.cases.model import Case
from bot.llm.errors import LLMError

if TYPE_CHECKING:
    from bot.base.settings import Settings
    from bot.config.model import Config

SCHEMA = {
    "type": "object",
    "properties": {"match": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["match", "reason"],
}
ROWS_SHOWN = 5
_SYSTEM = (
    "You review the answer key of a text-to-SQL benchmark. For a question and the SQL that is its accepted "
    "answer, say whether the SQL answers the question as asked. Reply with JSON only: "
    '{"match": true|false, "reason": "one sentence"}. Say false only for a real mismatch (a wrong filter, '
    "column, aggregate, grouping or ordering, or a part of the question the SQL leaves out), not for style."
)


def hint_messages(case: Case, result: ResultSet | None) -> list[dict[str, str]]:
    parts = [f"Question: {case.question.strip()}"]
    if case.instructions.strip():
        parts.append(f"Instructions: {case.instructions.strip()}")
    parts.append(f"Gold SQL:\n{case.gold_sql[0].strip()}")
    if result is not None:
        rows = json.dumps(plain_rows(result.rows, ROWS_SHOWN), ensure_ascii=False, default=str)
        parts.append(
            f"Its result on the database: {len(result.rows)} row(s), columns {list(result.columns)}; "
            f"the first rows: {rows}"
        )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


class LLMHint:
    """One client for the audit (the config's `llm:` settings; replies cached under the cache folder's llm/)."""

    def __init__(self, config: Config, settings: Settings) -> None:
        from bot.llm import LLMClient
        from bot.llm.cache import ReplyCache

        self.client = LLMClient(
            config.llm, environ=settings.environ, cache=ReplyCache(settings.cache_dir / "llm")
        )
        self.model = self.client.settings.model

    def __call__(self, case: Case, result: ResultSet | None) -> tuple[bool, str]:
        try:
            reply = self.client.complete_json(
                hint_messages(case, result),
                schema=SCHEMA,
                required=("match", "reason"),
                purpose=f"audit hint on case {case.id}",
                temperature=0.0,
            )
        except LLMError as exc:
            raise LLMError(
                f"audit --llm could not get the LLM's opinion on this case: {exc}",
                path=case.source or None,
                case_id=case.id,
            ) from exc
        return bool(reply.data["match"]), str(reply.data["reason"]).strip()[:500]


def detect_llm_hint(audit: CaseAudit) -> list[Suspect]:
    if audit.hint is None or not audit.case.gold_sql:
        return []
    answer = audit.hint(audit.case, audit.gold(0))
    if answer is None or answer[0]:
        return []
    reason = answer[1] or "no reason given"
    return [
        audit.suspect(
            "llm_hint",
            "low",
            f"hint (an LLM's opinion, not evidence; never counted by --strict): the question and gold #1 may "
            f"not match: {reason}",
            {"reason": reason, "question": audit.case.question},
        )
    ]
