"""The repair report (templates/repair_report.md.j2) and the console summary of a RepairOutcome."""

from __future__ import annotations

from bot.base.templating import environment, tidy_markdown
from bot.base.textfilters import pct
from bot.repair.outcome import RepairOutcome


def render_report(outcome: RepairOutcome) -> str:
    return tidy_markdown(environment().get_template("repair_report.md.j2").render(outcome=outcome))


def _actions(plan: dict | None) -> str:
    if not plan:
        return ""
    actions = [a for a in plan.get("actions") or [] if isinstance(a, dict)]
    return ", ".join(
        f"{'write' if a.get('content') is not None else 'edit'} {a.get('file')}" for a in actions
    )


def console_summary(outcome: RepairOutcome) -> str:
    """Total | Passed | Repaired | Failed, then the repaired cases with their actions and the rest with reasons."""
    after = outcome.counts_after
    repaired = outcome.repaired
    failed = after.total - after.passed - after.invalid
    lines = [
        f"{'Total':>7} | {'Passed':>7} | {'Repaired':>8} | {'Failed':>7}",
        f"{after.total:>7} | {after.passed:>7} | {len(repaired):>8} | {failed:>7}",
        f"pass rate {pct(outcome.head_pass_rate)} -> {pct(outcome.repaired_pass_rate)}",
    ]
    if outcome.scope:
        lines.append(f"({outcome.scope})")
    if repaired:
        lines.append("\nrepaired:")
        for c in repaired:
            a = c.accepted
            lines.append(f"  {c.id}: {_actions(a.plan) if a else c.note}")
    if outcome.unrepaired:
        lines.append("\nnot repaired:")
        for c in outcome.unrepaired:
            group = f" [{c.group}]" if c.group else ""
            lines.append(f"  {c.id}{group}: {c.last_reason[:300] or 'no attempt'}")
    if outcome.skipped:
        lines.append(f"\nnot attempted (over --max-failures or stopped): {', '.join(outcome.skipped)}")
    llm = outcome.llm
    cost = "n/a" if llm.cost_usd is None else f"${llm.cost_usd:.4f}"
    lines.append(
        f"\nLLM: {llm.calls} call(s), {llm.cached_calls} cached, "
        f"{llm.prompt_tokens + llm.completion_tokens} tokens, {cost}, "
        f"JSON parse success {pct(llm.parse_success_rate)}"
    )
    if outcome.stopped:
        lines.append(f"stopped early: {outcome.stopped}")
    return "\n".join(lines)
