"""What a case asks, as a hash (question, database, gold SQL, category): a case whose id changed but whose hash
did not is a rename (bot.compare.transitions pairs them)."""

from __future__ import annotations

import hashlib
import json
from typing import Protocol


class CaseContent(Protocol):
    """What identifies a case's content (bot.cases.model.Case has it), for case_content_hash."""

    @property
    def question(self) -> str: ...
    @property
    def db(self) -> str: ...
    @property
    def gold_sql(self) -> tuple[str, ...]: ...
    @property
    def category(self) -> str: ...


def case_content_hash(case: CaseContent) -> str:
    """A hash of what a case asks (question, database, gold SQL, category; whitespace runs collapsed), not of
    its id, tags or file: compare pairs a removed case with a new one of the same hash as a rename."""

    def norm(text: str) -> str:
        return " ".join(text.split())

    content = [case.category, case.db, norm(case.question), [norm(g) for g in case.gold_sql]]
    return hashlib.sha256(json.dumps(content, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
