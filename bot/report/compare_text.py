"""A comparison as plain text for the terminal (`compare`, `check`): the verdict, the pass rates and the cases
that changed, section by section."""

from __future__ import annotations

from bot.compare.comparison import TRANSITIONS, CaseChange, Comparison
from bot.report.metrics_view import metric_rows, metrics_line

_LISTED = 20  # regressed / fixed / flaky ids printed before "... and N more"
_CAUSES = 10  # causes printed (the comment and the report have all)
_CAUSE_LINES = 6  # diff lines printed per cause
_REASON = 160  # characters of a case's reason in the text summary (the JSON keeps all of it)


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _points(delta: float | None) -> str:
    return "" if delta is None else f" ({delta * 100:+.1f} points)"


def _case_line(change: CaseChange, *, said: str = "") -> str:
    line = f"  {change.id}"
    if change.renamed_from:
        line += f" (renamed from {change.renamed_from}; {change.judged.replace('_', ' ')})"
    if max(change.base_repeats, change.head_repeats) > 1:
        line += f" [{change.base_passes}/{change.base_repeats} → {change.head_passes}/{change.head_repeats}"
        line += f", p={change.p_value:.3g}]" if change.p_value is not None else "]"
    reason = change.reason if len(change.reason) <= _REASON else change.reason[: _REASON - 1] + "…"
    return f"{line}: {said}{reason}" if reason else line


def _section(title: str, changes: list[CaseChange], *, said: str = "") -> list[str]:
    """The changes under `title`, each with its reason (`said` first: "failed before: " for a fixed case,
    whose reason is the base's)."""
    if not changes:
        return []
    lines = [f"\n{title} ({len(changes)}):", *(_case_line(c, said=said) for c in changes[:_LISTED])]
    if len(changes) > _LISTED:
        lines.append(f"  ... and {len(changes) - _LISTED} more")
    return lines


def render_summary(comparison: Comparison) -> str:
    """A compact text summary: verdict, pass rates, counts per transition, regressed / fixed / flaky ids."""
    c, o = comparison, comparison.overall
    forced = " (forced)" if c.forced else ""
    if c.baseline == "none":
        lines = [
            f"sqlcanary compare: {c.verdict.upper()} (no baseline: head only)",
            f"no baseline: {c.baseline_reason}",
            f"head pass rate {_pct(o.head_rate)}: {o.head.passed} of {o.head.total - o.head.invalid} decidable "
            f"case(s) passed"
            + ("" if c.gate.min_pass_rate is not None else " (no minimum pass rate set, so it passes)"),
        ]
        lines += _section("failed", [ch for ch in c.cases if ch.head_status in ("failed", "errored")])
    else:
        lines = [
            f"sqlcanary compare: {c.verdict.upper()}{forced}",
            f"pass rate {_pct(o.base_rate)} → {_pct(o.head_rate)}{_points(o.delta)}; "
            f"{o.base.total} → {o.head.total} case(s)",
            "  ".join(f"{t.replace('_', ' ')} {c.counts[t]}" for t in TRANSITIONS if c.counts.get(t))
            or "no cases",
        ]
        lines += [metrics_line(metric_rows(c)).replace("**", "")] if c.metrics else []
        lines += _section("regressed", c.judged_as("regressed"))
        lines += _why(c)
        lines += _section("fixed", c.judged_as("fixed"), said="failed before: ")
        lines += _section("flaky (labelled, not failed)", c.judged_as("flaky"))
        lines += _section("removed", c.of("removed"))
    if c.reasons:
        label = "not comparable" if c.verdict == "incomparable" else "gate failed"
        lines += [f"\n{label}:", *(f"  - {r}" for r in c.reasons)]
    if c.verdict == "incomparable":
        lines.append("  (--force compares them anyway)")
    if c.warnings:
        lines += ["\nwarnings:", *(f"  - {w}" for w in c.warnings)]
    return "\n".join(lines)


def _why(c: Comparison) -> list[str]:
    """Each changed KB span the regressed answers used (bot.compare.causes), with its diff: what the comment's
    "Why" section says, for the terminal."""
    if not c.causes:
        return []
    lines = ["\nwhy (changed KB lines the regressed answers used):"]
    for cause in c.causes[:_CAUSES]:
        lines.append(f"  {cause.file} {cause.where}: {', '.join(cause.cases)}")
        diff = [d for d in cause.diff.splitlines() if d.strip()]
        lines += [f"    {d}" for d in diff[:_CAUSE_LINES]]
        if len(diff) > _CAUSE_LINES:
            lines.append(f"    ... and {len(diff) - _CAUSE_LINES} more line(s)")
    if len(c.causes) > _CAUSES:
        lines.append(f"  ... and {len(c.causes) - _CAUSES} more (comment.md and report.html have them all)")
    return lines
