"""`repair --dry-run` on the terminal: each plan the loop checked and would have tried, with its diff.

A dry run validates every plan as a real run does (paths, search text, the KB validator), then records it as a
`dry_run` attempt holding the plan and its diff instead of applying it. `dry_run_text(outcome)` shows those
attempts; the console summary names them by `DRY_RUN_REASON`. The plans and diffs are the LLM's text: control
characters (terminal escapes) are shown as `\\x..`, never sent to the terminal."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot.repair.outcome import AttemptRecord, CritiqueRecord, RepairOutcome

DRY_RUN_REASON = "dry run: the plan is valid and shown below, not applied"
MAX_DIFF_LINES = 400  # per plan; outcome.json and repair_report.md hold every line
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _safe(text: object) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))


def _one_line(text: object, width: int = 600) -> str:
    flat = " ".join(_safe(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _actions(plan: Mapping[str, Any]) -> list[str]:
    out = []
    for a in plan.get("actions") or []:
        if not isinstance(a, dict):
            continue
        kind = "write" if a.get("content") is not None else "edit"
        out.append(f"{kind} {_one_line(a.get('file'), 200)}")
    return out


def format_plan(title: str, record: AttemptRecord | CritiqueRecord) -> str:
    """One plan for the terminal: a title line, its reasoning, issues and actions, then its unified diff."""
    plan = record.plan or {}
    lines = [f"== {_one_line(title, 200)} =="]
    if plan.get("reasoning"):
        lines.append(f"reasoning: {_one_line(plan['reasoning'])}")
    for key, label in (("issues_found", "issue"), ("improvements_made", "improvement")):
        lines += [f"{label}: {_one_line(v, 300)}" for v in (plan.get(key) or [])[:10]]
    actions = _actions(plan)
    if actions:
        lines.append("actions: " + "; ".join(actions))
    diff = _safe(record.diff).splitlines()
    lines += diff[:MAX_DIFF_LINES] or ["(the plan changes no line)"]
    if len(diff) > MAX_DIFF_LINES:
        lines.append(
            f"... {len(diff) - MAX_DIFF_LINES} more diff lines (outcome.json and repair_report.md hold them all)"
        )
    return "\n".join(lines)


def dry_run_text(outcome: RepairOutcome) -> str:
    """Every plan a dry run showed, case by case, then the review pass's; "" when the outcome is no dry run."""
    if not outcome.dry_run:
        return ""
    plans, missing = [], []
    for case in outcome.cases:
        shown = [a for a in case.attempts if a.outcome == "dry_run"]
        plans += [format_plan(f"{case.id}: plan of attempt {a.n}", a) for a in shown]
        if not shown and case.attempts:
            missing.append(f"== {_one_line(case.id, 200)}: no valid plan ==\n{_one_line(case.last_reason)}")
    plans += [
        format_plan(f"review pass, iteration {r.n}", r) for r in outcome.critique if r.outcome == "dry_run"
    ]
    head = f"dry run: {len(plans)} plan(s) checked and shown below; nothing was applied"
    return "\n\n".join([head, *plans, *missing]) + "\n"
