"""What more than one command shares: a run's options (`run`, `check`, `rescore`), the gate's (`compare`, `check`,
`report`), and how a finished run is shown in the terminal (`run`, `rescore`). The commands import it; it imports
no command."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

from bot.base.errors import EXIT_INTERRUPTED
from bot.base.rates import RateError, parse_rate
from bot.base.settings import Settings
from bot.compare.gate import GATE_FIELDS, resolve_gate
from bot.config.gate_settings import GateSettings
from bot.report.console import Paint, Progress, run_report, wants_colour
from bot.run.pipeline import DEFAULT_OUT, evaluate_request, run_exit
from bot.run.request import RunRequest
from bot.run.rerun import RunInterrupted
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
    p.add_argument(
        "--sandbox",
        choices=["auto", "on", "off"],
        help="as root, run the agent's code as an unprivileged user of its own: on (required), auto (unless that "
        "user cannot reach the agent or its Python: then as root, with a warning) or off (default: auto for "
        "`run`, on for `check`; the Action always sandboxes)",
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
        "--perturb",
        type=int,
        metavar="K",
        help="also run each query case on K perturbed copies of its database: a pass means the same rows on "
        "the real data and on every copy (default: the suite's `perturb`, else 0)",
    )
    p.add_argument(
        "--no-answer-cache",
        action="store_true",
        help="always ask the agent (default: reuse answers whose agent, KB and case are unchanged)",
    )
    add_output_arguments(p)


def fraction(text: str) -> float:
    """A rate as an argparse `type=`: bot.base.rates' parser (the flags below use RateAction, for its message)."""
    try:
        return parse_rate(text, name="")
    except RateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class RateAction(argparse.Action):
    """A rate flag (`--min-pass-rate 90%` or `0.9`), read by bot.base.rates; a bad value stops the command with
    the parser's words: `--min-pass-rate 90: a rate is 0-1 or a percentage: did you mean 90%?` (exit 2)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        try:
            setattr(namespace, self.dest, parse_rate(values, name=option_string or self.dest))
        except RateError as exc:
            parser.error(str(exc))


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """`--verbose` and `--quiet`, as pytest spells them, on every command that shows progress."""
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    talk.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="a line per case as it finishes, and every case that did not pass with its whole reason",
    )


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    """The quality-gate flags; unset ones keep the config's (or GateSettings') value."""
    g = p.add_argument_group("quality gate")
    g.add_argument("--max-regressions", type=int, metavar="N", help="regressed cases allowed (default 0)")
    g.add_argument(
        "--min-pass-rate", action=RateAction, metavar="X", help="fail below this head pass rate (0.9 or 90%%)"
    )
    g.add_argument(
        "--max-pass-rate-drop",
        action=RateAction,
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
        "--side",
        choices=["base", "head"],
        help="set by `check` for each tree's run: `head` (a pull request's agent) reuses a cached answer only when "
        "the whole tree, the agent and the config are unchanged, whatever `agent.inputs` says",
    )
    p.add_argument(
        "--suite-data", help=argparse.SUPPRESS
    )  # set by `check` for the head's run: the suite, as read
    p.add_argument(
        "--structural", action="store_true", help="structural diff on every case, not only failures"
    )
    p.add_argument(
        "--llm-judge",
        action="store_true",
        help="ask the LLM (config `llm:`) whether each failing prediction is equivalent to the gold (one call per "
        "failing case; a diagnostic, never the verdict)",
    )
    p.add_argument(
        "--min-pass-rate",
        action=RateAction,
        metavar="X",
        help="exit 1 when the pass rate is below this (0.9 or 90%%)",
    )
    p.add_argument(
        "--fail-on-errored",
        action="store_true",
        help="exit 1 when a case errored (the agent failed on it), as pytest counts errors",
    )
    p.add_argument(
        "--allow-invalid",
        action="store_true",
        help="an invalid case (its gold SQL does not run) is reported but does not fail the run (default: exit 2)",
    )
    p.add_argument(
        "--lf",
        "--last-failed",
        dest="last_failed",
        action="store_true",
        help="only the cases that did not pass in the last run (the RunResult at --out, else the config's `out:`, "
        f"else {DEFAULT_OUT}); every case when there is none",
    )
    p.add_argument(
        "-x",
        "--exitfirst",
        action="store_true",
        help="stop at the first case that does not pass (exit 1); the finished cases are kept",
    )
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N (split by case id; see `merge`)")


def show_run(req: RunRequest, settings: Settings) -> int:
    """Evaluate `req` with progress on stderr, print the results table and what failed, return the exit code.
    (`rescore` shows a run the same way: bot.report.console renders it, bot.run.pipeline decides the code.)
    Colour on a terminal unless NO_COLOR is set; an interruption says where the finished cases are (exit 130)."""
    no_color = settings.environ.get("NO_COLOR")

    def err(text: str) -> None:
        print(text, file=sys.stderr)

    # The progress display for n cases: Progress(n, ...)
    progress = partial(
        Progress,
        enabled=not req.quiet,
        ci=settings.ci,
        verbose=req.verbose,
        colour=wants_colour(sys.stderr, no_color),
    )
    try:
        done = evaluate_request(
            req, settings, say=err if not req.quiet else lambda _: None, progress=progress
        )
    except RunInterrupted as exc:
        n = exc.finished()
        kept = f"the {n} case(s) finished are kept in {exc.out}" if n is not None else f"see {exc.out}"
        err(f"sqlcanary: interrupted: {kept} (marked incomplete)")
        return EXIT_INTERRUPTED
    print(
        run_report(done.run, done.out, paint=Paint(wants_colour(sys.stdout, no_color)), verbose=req.verbose)
    )
    return run_exit(done, req, say=err)
