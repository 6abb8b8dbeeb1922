"""`sqlcanary compare BASE.json HEAD.json`: which cases a change broke or fixed, and does the gate pass.

`add_gate_arguments` and `gate_from_args` are shared with `sqlcanary check`, so both read the same flags.
"""

from __future__ import annotations

import argparse

from bot.base.results import read_run, write_json_atomic
from bot.base.settings import Settings
from bot.compare.comparison import TRANSITIONS, CaseChange, Comparison, GateSettings, compare_runs
from bot.compare.gate import GATE_FIELDS, exit_code, resolve_gate

_LISTED = 20  # regressed / fixed / flaky ids printed before "... and N more"
_REASON = 160  # characters of a case's reason in the text summary (the JSON keeps all of it)


def fraction(text: str) -> float:
    """A rate on the command line: `0.9` or `90%`."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a rate: {text!r} (use 0.9 or 90%)") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1 (0% and 100%), got {text!r}")
    return value


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    """The quality-gate flags; unset ones keep the config's (or GateSettings') value."""
    g = p.add_argument_group("quality gate")
    g.add_argument("--max-regressions", type=int, metavar="N", help="regressed cases allowed (default 0)")
    g.add_argument(
        "--min-pass-rate", type=fraction, metavar="X", help="fail below this head pass rate (0.9 or 90%%)"
    )
    g.add_argument(
        "--max-pass-rate-drop",
        type=fraction,
        metavar="X",
        help="fail when the pass rate drops more than this",
    )
    g.add_argument(
        "--alpha", type=float, metavar="A", help="significance level for regressions of repeated runs (0.05)"
    )
    g.add_argument(
        "--min-regression-count",
        type=int,
        metavar="N",
        help="repeated runs: attempts that must move before a regression is called (default 1)",
    )
    g.add_argument(
        "--allow-removed",
        action="store_true",
        default=None,
        help="removed cases do not fail the gate (by default they do: a deleted case cannot fail)",
    )
    g.add_argument(
        "--allow-invalid",
        action="store_true",
        default=None,
        help="cases that passed on base and are invalid on head do not fail the gate",
    )
    g.add_argument(
        "--allow-edited",
        action="store_true",
        default=None,
        help="`check`: an edited case whose head answer fails the base's version does not fail the gate",
    )


def gate_from_args(args: argparse.Namespace, defaults: GateSettings | None = None) -> GateSettings:
    """`defaults` (e.g. the config's `gate:`) overridden by the flags the user gave."""
    return resolve_gate(defaults, gate_flags(args))


def gate_flags(args: argparse.Namespace) -> dict[str, object]:
    """The gate flags the user gave (unset ones are None and are left out)."""
    return {k: getattr(args, k) for k in GATE_FIELDS if getattr(args, k, None) is not None}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", help="the base RunResult JSON (e.g. the target branch's run)")
    p.add_argument("head", help="the head RunResult JSON (the change under review)")
    p.add_argument(
        "--force",
        action="store_true",
        help="compare even when the suite, case selection, fixtures, preset or evaluator version differ "
        "(the reasons become warnings)",
    )
    p.add_argument("--out", help="write the Comparison JSON here")
    add_gate_arguments(p)


def main(args: argparse.Namespace, settings: Settings) -> int:  # noqa: ARG001
    gate = gate_from_args(args)
    base, head = read_run(args.base), read_run(args.head)
    comparison = compare_runs(base, head, gate=gate, force=args.force)
    print(render_summary(comparison))
    if args.out:
        write_json_atomic(args.out, comparison.model_dump_json(indent=2) + "\n")
        print(f"\ncomparison written to {args.out}")
    return exit_code(comparison.verdict)


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _points(delta: float | None) -> str:
    return "" if delta is None else f" ({delta * 100:+.1f} points)"


def _case_line(change: CaseChange) -> str:
    line = f"  {change.id}"
    if change.renamed_from:
        line += f" (renamed from {change.renamed_from}; {change.judged.replace('_', ' ')})"
    if max(change.base_repeats, change.head_repeats) > 1:
        line += f" [{change.base_passes}/{change.base_repeats} → {change.head_passes}/{change.head_repeats}"
        line += f", p={change.p_value:.3g}]" if change.p_value is not None else "]"
    reason = change.reason if len(change.reason) <= _REASON else change.reason[: _REASON - 1] + "…"
    return f"{line}: {reason}" if reason else line


def _section(title: str, changes: list[CaseChange]) -> list[str]:
    if not changes:
        return []
    lines = [f"\n{title} ({len(changes)}):", *(_case_line(c) for c in changes[:_LISTED])]
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
        lines += _section("regressed", c.judged_as("regressed"))
        lines += _section("fixed", c.judged_as("fixed"))
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
