"""What a chat-completion request is about, read from its messages the way sqlcanary writes them
(templates/prompts/): the kind of request, the case it is for and which attempt, so a replay file can match it
and a request no entry matches can be named ("kind repair, case dau_id_nov, attempt 2").

Kinds: `repair` (one failing case, bot.repair.prompts.case_messages), `critique` (the review of kept edits),
`agent` (the built-in llm agent answering a question), `judge` (the --llm-judge diagnostic), `chat` (anything
else). tests/unit/test_replay_request.py renders each real prompt and checks it is read back right."""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("repair", "critique", "agent", "judge", "chat")
_FAILING_CASE = re.compile(r"^## Failing case `([^`]+)`", re.M)
_ATTEMPT = re.compile(r"^- Attempt \d+:", re.M)
_CRITIQUE = "## Review the KB edits that were kept"
_CRITIQUE_FEEDBACK = "Earlier review updates were rejected:"
_REPAIRED = re.compile(r"^Repaired cases: (.*)$", re.M)
_AGENT = "You are a text-to-SQL agent"
_JUDGE = "Decide whether two PostgreSQL queries"


@dataclass(frozen=True)
class RequestInfo:
    kind: str
    case: str | None = None  # the case id (repair), or the repaired cases joined by ", " (critique)
    attempt: int = 1  # 1 + the earlier attempts the prompt reports as rejected
    question: str | None = None  # agent and judge requests: the question asked
    reask: bool = False  # the client's second try after an unusable reply (the messages hold that reply)
    text: str = ""  # every message's content, joined: what `contains` searches

    def label(self) -> str:
        """`kind repair, case dau_id_nov, attempt 2`: how a request is named in messages."""
        parts = [f"kind {self.kind}"]
        if self.case:
            parts.append(f"case {self.case}" if self.kind != "critique" else f"repaired {self.case}")
        if self.question and not self.case:
            q = " ".join(self.question.split())
            parts.append(f"question {q[:80] + '…' if len(q) > 80 else q!r}")
        if self.kind in ("repair", "critique"):
            parts.append(f"attempt {self.attempt}")
        if self.reask:
            parts.append("re-ask")
        return ", ".join(parts)


def _contents(messages: list[dict]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):  # content parts: keep the text ones
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        out.append((str(m.get("role", "")) if isinstance(m, dict) else "", str(content or "")))
    return out


def _after(text: str, heading: str) -> str | None:
    """The paragraph after `heading` (up to the next blank line or `Instructions:` line)."""
    at = text.find(heading)
    if at < 0:
        return None
    rest = text[at + len(heading) :].lstrip("\n")
    para = re.split(r"\n\s*\n|\nInstructions:", rest, maxsplit=1)[0]
    return para.strip() or None


def describe(request: dict) -> RequestInfo:
    """The request body of POST /chat/completions, read back into what it is about."""
    raw = request.get("messages")
    messages = _contents(raw if isinstance(raw, list) else [])
    text = "\n".join(c for _, c in messages)
    system = next((c for r, c in messages if r == "system"), "")
    user = next((c for r, c in messages if r == "user"), "")
    reask = any(r == "assistant" for r, _ in messages)
    if found := _FAILING_CASE.search(user):
        attempt = 1 + len(_ATTEMPT.findall(user))
        return RequestInfo("repair", found.group(1), attempt, reask=reask, text=text)
    if _CRITIQUE in user:
        repaired = _REPAIRED.search(user)
        feedback = user.split(_CRITIQUE_FEEDBACK, 1)[1] if _CRITIQUE_FEEDBACK in user else ""
        attempt = 1 + len(re.findall(r"^- ", feedback, re.M))
        case = repaired.group(1).strip() if repaired else None
        return RequestInfo("critique", case, attempt, reask=reask, text=text)
    if system.startswith(_AGENT):
        return RequestInfo("agent", question=_after(user, "# Request"), reask=reask, text=text)
    if user.startswith(_JUDGE):
        return RequestInfo("judge", question=_after(user, "# Question"), reask=reask, text=text)
    return RequestInfo("chat", reask=reask, text=text)
