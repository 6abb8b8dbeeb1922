"""What more than one command shares: a run's options (`run`, `check`, `rescore`), the gate's (`compare`, `check`,
`report`), and how a finished run is shown in the terminal (`run`, `rescore`). The commands import it; it imports
no command."""

from __future__ import annotations

import argparse
import sys

from bot.base.settings import Settings
from bot.compare.gate import GATE_FIELDS, resolve_gate
from bot.config.gate_settings import GateSettings
from bot.report.console import Progress, run_report
from bot.run.pipeline import DEFAULT_OUT, evaluate_request, run_exit
from bot.run.request import RunRequest
from bot.scoring.presets import PRESETS


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The options `run` shares with `check`: agent, database, case selection, judging, repeats."""
    p.add_argument(
        "--agent",
        help="gold | gold:all | predictions:PATH | run:RUN.json | command:CMD | "
        "python:FILE_OR_MODULE:FUNCTION (default: the config's agent, else gold)",
    )
    p.add_argument(
        "--agent-timeout",
        type=float,
        help="seconds a process agent may take per case (default 120; the llm agent's requests are bounded by "
        "llm.timeout_s and llm.first_timeout_s instead)",
    )
    p.add_argument(
        "--persistent", action="store_true", help="command agents: one long-lived JSON-lines process"
    )
    p.add_argument("--dsn", help="PostgreSQL to use (default: DATABASE_URL, then an embedded server)")
    p.add_argument("--postgres", choices=["auto", "embedded", "docker"], help="where PostgreSQL comes from")
    p.add_argument("--tags", help="only cases with any of these tags (comma-separated)")
    p.add_argument("--id", action="append", dest="ids", help="only this case id (repeatable; globs allowed)")
    p.add_argument("--jobs", type=int, help="parallel workers (default: 2)")
    p.add_argument("--preset", choices=PRESETS, help="compare results the way this evaluator does")
    p.add_argument("--statement-timeout", help="per statement, e.g. 30s (default: the suite's, else 30s)")
    p.add_argument("--row-cap", type=int, help="rows fetched per query before a result counts as truncated")
    p.add_argument("--repeat", type=int, metavar="K", help="ask the agent K times per case (flaky agents)")
    p.add_argument(
        "--no-answer-cache",
        action="store_true",
        help="always ask the agent (default: reuse answers whose agent, KB and case are unchanged)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")


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


def add_run_command_arguments(p: argparse.ArgumentParser) -> None:
    """`run`'s arguments (also `rescore`'s): the suite, the config, the run options, where to write."""
    p.add_argument("suite", nargs="?", help="suite folder or file (default: `suite` in sqlcanary.yml)")
    p.add_argument("--config", help="sqlcanary.yml (default: the suite folder's, then ./sqlcanary.yml)")
    add_run_arguments(p)
    p.add_argument("--out", help=f"where to write the RunResult JSON (default: {DEFAULT_OUT})")
    p.add_argument(
        "--structural", action="store_true", help="structural diff on every case, not only failures"
    )
    p.add_argument(
        "--llm-judge",
        action="store_true",
        help="ask the LLM (config `llm:`) whether each failing prediction is equivalent to the gold (one call per "
        "failing case; a diagnostic, never the verdict)",
    )
    p.add_argument("--min-pass-rate", type=float, help="exit 1 when the pass rate (0-1) is below this")
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N (split by case id; see `merge`)")


def show_run(req: RunRequest, settings: Settings) -> int:
    """Evaluate `req` with progress on stderr, print the results table and what failed, return the exit code.
    (`rescore` shows a run the same way: bot.report.console renders it, bot.run.pipeline decides the code.)"""

    def err(text: str) -> None:
        print(text, file=sys.stderr)

    def progress(n: int) -> Progress:
        return Progress(n, enabled=not req.quiet, ci=settings.ci)

    done = evaluate_request(req, settings, say=err if not req.quiet else lambda _: None, progress=progress)
    print(run_report(done.run, done.out))
    return run_exit(done, req, say=err)
