"""An audit report as text for the terminal (a block per suspect: case, kind, confidence, message, evidence) or
as the JSON document `--format json` writes."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from bot.audit.model import CONFIDENCES, HINT_KINDS, AuditReport, Suspect

_EVIDENCE_WIDTH = 100


def as_json(report: AuditReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _EVIDENCE_WIDTH else text[: _EVIDENCE_WIDTH - 1] + "…"


def _block(s: Suspect) -> list[str]:
    where = f"  ({s.source})" if s.source else ""
    lines = [f"{s.case_id}: {s.kind} [{s.confidence}]{where}", f"  {s.message}"]
    for key, value in s.evidence.items():
        if value is None or value == [] or value == {}:
            continue
        lines.append(f"    {key}: {_value(value)}")
    return lines


def as_text(report: AuditReport) -> str:
    lines: list[str] = []
    for s in report.suspects:
        lines.extend(_block(s))
    cases = len({s.case_id for s in report.suspects})
    by_conf = Counter(s.confidence for s in report.suspects)
    kinds = Counter(s.kind for s in report.suspects)
    if report.suspects:
        lines.append("")
        conf = ", ".join(f"{by_conf[c]} {c}" for c in CONFIDENCES if by_conf[c])
        kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        lines.append(
            f"audit of {report.suite}: {len(report.suspects)} suspect(s) in {cases} of {report.audited} "
            f"gold(s) ({conf}; {kind})"
        )
    else:
        lines.append(f"audit of {report.suite}: no suspect gold in {report.audited} gold(s)")
    hints = sum(1 for s in report.suspects if s.kind in HINT_KINDS)
    if hints:
        lines.append(f"({hints} of them LLM hint(s): opinions, not evidence; --strict does not count them)")
    if report.skipped:
        lines.append(f"({report.skipped} case(s) of other categories are not audited)")
    return "\n".join(lines) + "\n"
