"""`sqlcanary repair RUN.json`: ask an LLM for KB edits that fix the run's failing cases, keep the proven ones,
write outcome.json, kb.diff and repair_report.md. Without an LLM and with a base run, apply the verified partial
revert of the KB changes that broke the regressed cases instead (bot.repair.offline)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.base.errors import EXIT_BAD_INPUT, EXIT_GATE, EXIT_OK, ConfigError
from bot.base.git import commit_files
from bot.base.results import RunResult, count, read_run, write_json_atomic
from bot.base.secrets import scrub
from bot.base.settings import Settings
from bot.cases.loader import load_suite
from bot.config.model import find_config

DEFAULT_OUT = "sqlcanary-results/repair"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run_file", metavar="RUN.json", nargs="?", help="a saved RunResult whose failing cases to repair"
    )
    p.add_argument(
        "--from-check",
        metavar="DIR",
        help="repair what `sqlcanary check --out DIR` found: its head.json, with base.json as the base",
    )
    p.add_argument("--config", help="sqlcanary.yml (default: the run's suite folder's, then ./sqlcanary.yml)")
    p.add_argument("--suite", help="the suite folder (default: the config's `suite`, then the run's)")
    p.add_argument("--dsn", help="PostgreSQL to use (default: DATABASE_URL, then an embedded server)")
    p.add_argument("--postgres", choices=["auto", "embedded", "docker"], help="where PostgreSQL comes from")
    p.add_argument("--max-failures", type=int, default=5, help="failing cases sent to the model (default 5)")
    p.add_argument("--max-retries", type=int, default=3, help="attempts per case (default 3)")
    p.add_argument("--max-llm-calls", type=int, default=50, help="LLM requests in all (default 50)")
    p.add_argument(
        "--max-critique", type=int, default=5, help="review iterations over kept edits (default 5)"
    )
    p.add_argument(
        "--base",
        metavar="BASE.json",
        help="the base commit's run, for the base pass rate (without an LLM: what the partial revert restores)",
    )
    p.add_argument(
        "--max-agent-calls",
        type=int,
        default=100,
        help="without an LLM: agent calls spent finding which KB change broke each regressed case (default 100)",
    )
    p.add_argument("--dry-run", action="store_true", help="show the plans, apply nothing")
    p.add_argument("--no-repair", action="store_true", help="evaluate the suite only: no LLM, no edits")
    p.add_argument("--commit", action="store_true", help="git commit the KB changes on the current branch")
    p.add_argument(
        "--out", help=f"folder for outcome.json, kb.diff, repair_report.md (default {DEFAULT_OUT})"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def _from_check(args: argparse.Namespace) -> None:
    """`--from-check DIR` stands for `DIR/head.json --base DIR/base.json`."""
    if args.from_check:
        folder = Path(args.from_check)
        if args.run_file:
            raise ConfigError("give RUN.json or --from-check DIR, not both")
        if not (folder / "head.json").is_file():
            raise ConfigError(
                "no head.json here: is it the --out folder of `sqlcanary check`?", path=str(folder)
            )
        args.run_file = str(folder / "head.json")
        if (folder / "comparison.json").is_file():  # the cause links, for the prompts
            args.comparison = str(folder / "comparison.json")
        if not args.base and (folder / "base.json").is_file():
            args.base = str(folder / "base.json")
    elif not args.run_file:
        raise ConfigError("give the run to repair (RUN.json) or --from-check DIR")


def _check_comparison(args: argparse.Namespace, run):
    """The check's comparison.json (`--from-check`), when it compared this very run; else None."""
    from bot.compare.comparison import Comparison

    path = getattr(args, "comparison", None)
    if not path:
        return None
    try:
        cmp = Comparison.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cmp if cmp.head == run.meta else None


def _positive(args: argparse.Namespace) -> None:
    for name in ("max_failures", "max_retries", "max_llm_calls", "max_agent_calls"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_critique < 0:
        raise ConfigError("--max-critique must be at least 0")


def base_pass_rate(base: RunResult, suite) -> float | None:
    """The base run's pass rate over the suite's cases only, like the head's and the repaired one's."""
    ids = {c.id for c in suite.cases}
    return count([c for c in base.cases if c.id in ids]).pass_rate


def commit_message(outcome) -> str:
    if outcome.revert is not None:
        from bot.repair.offline import revert_commit_message

        return revert_commit_message(outcome)
    fixed = [c for c in outcome.repaired if c.attempts]
    lines = [f"sqlcanary repair: KB fixes for {len(fixed)} failing case(s)", ""]
    for c in fixed:
        a = c.accepted
        improvements = (a.plan or {}).get("improvements_made") or [] if a else []
        what = "; ".join(" ".join(str(i).split())[:200] for i in improvements[:3]) or "KB edit"
        lines.append(f"- {c.id}: {what}")
    rate = outcome.head_pass_rate, outcome.repaired_pass_rate
    if None not in rate:
        lines += ["", f"Pass rate {rate[0]:.1%} -> {rate[1]:.1%}; files: {', '.join(outcome.files_changed)}"]
    return "\n".join(lines) + "\n"


# What a repair can do without an LLM, said when there is none (or it cannot be reached).
OFFLINE = (
    "Without a model: `llm.base_url: replay:FILE` answers from scripted replies; `--no-repair` evaluates and "
    "reports the suite; and with a base run (`--from-check DIR` of `sqlcanary check`, or `--base BASE.json`) "
    "repair applies the verified partial revert itself: it finds which KB change broke each regressed case by "
    "reverting it and asking the agent again, as `sqlcanary check --attribute-calls N` does, and reverts those "
    "changes only if that holds on the whole suite (what the Action's repair pull request falls back to)"
)


def _offline(args: argparse.Namespace, run: RunResult, config, suite, settings: Settings):
    """No LLM and a base run: the verified partial revert (bot.repair.offline), applied unless --dry-run."""
    from bot.check.diff import pr_diff
    from bot.repair.offline import OfflineRequest, run_offline

    def say(text: str) -> None:
        if not args.quiet:
            print(f"sqlcanary repair: {text}", file=sys.stderr)

    req = OfflineRequest(
        run=run,
        base=read_run(args.base),
        config=config,
        suite=suite,
        differ=lambda repo, sha: pr_diff(repo, sha, None, environ=settings.environ),
        run_file=args.run_file,
        base_file=args.base,
        comparison=_check_comparison(args, run),
        dry_run=args.dry_run,
        max_agent_calls=args.max_agent_calls,
        dsn=args.dsn,
        postgres=args.postgres,
    )
    return run_offline(req, settings, say=say)


def _offline_exit(outcome) -> int:
    """0 when the partial revert was applied (or shown by --dry-run) or nothing fails; 1 when no repair was found
    for the failing cases (README, "Repairing the knowledge base")."""
    record = outcome.revert
    if record.holds or all(c.repaired for c in outcome.cases):
        return EXIT_OK
    return EXIT_GATE


def main(args: argparse.Namespace, settings: Settings) -> int:
    from bot.llm.errors import LLMUnavailable
    from bot.repair.dryrun import dry_run_text
    from bot.repair.offline import llm_configured, offline_text
    from bot.repair.report import console_summary, render_report
    from bot.repair.request import RepairRequest, run_repair
    from bot.repair.setup import Limits

    _positive(args)
    _from_check(args)
    run = read_run(args.run_file)
    config = find_config(args.config, args.suite or run.meta.suite_path or None)
    suite_path = args.suite or (str(config.path(config.suite)) if config.suite else run.meta.suite_path)
    if not suite_path:
        raise ConfigError("no suite: pass --suite or set `suite:` in sqlcanary.yml", path=args.run_file)
    suite = load_suite(suite_path)
    offline = not args.no_repair and args.base and not llm_configured(config, settings)
    req = RepairRequest(
        run=run,
        config=config,
        suite=suite,
        limits=Limits(
            max_failures=args.max_failures,
            max_retries=args.max_retries,
            max_llm_calls=args.max_llm_calls,
            max_critique=args.max_critique,
        ),
        dry_run=args.dry_run,
        evaluate_only=args.no_repair,
        base_pass_rate=base_pass_rate(read_run(args.base), suite) if args.base else None,
        comparison=_check_comparison(args, run),
        dsn=args.dsn,
        postgres=args.postgres,
    )
    if not args.quiet and not offline:
        failing = sum(c.status == "failed" for c in run.cases)
        print(f"sqlcanary: repairing {failing} failing case(s) of {suite.name}", file=sys.stderr)
    try:
        outcome = _offline(args, run, config, suite, settings) if offline else run_repair(req, settings)
    except LLMUnavailable as exc:
        raise LLMUnavailable(f"{exc}. {OFFLINE}") from None
    out = Path(args.out or DEFAULT_OUT)
    write_json_atomic(out / "outcome.json", outcome.model_dump_json(indent=2) + "\n")
    write_json_atomic(out / "kb.diff", outcome.kb_diff)
    write_json_atomic(out / "repair_report.md", scrub(render_report(outcome), settings.secrets))
    print(scrub(console_summary(outcome), settings.secrets))
    if outcome.revert is not None:
        print("\n" + scrub(offline_text(outcome), settings.secrets))
    elif outcome.dry_run:
        print(scrub(dry_run_text(outcome), settings.secrets))
    print(f"\nwritten to {out}/ (outcome.json, kb.diff, repair_report.md)")
    if args.commit and outcome.files_changed and not args.dry_run:
        sha = commit_files(
            Path(config.base_dir), outcome.files_changed, commit_message(outcome), environ=settings.environ
        )
        print(f"committed the KB changes as {sha[:12]}")
    if outcome.stopped and outcome.stopped.startswith("LLM error"):
        print(f"sqlcanary: error: {outcome.stopped}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _offline_exit(outcome) if outcome.revert is not None else EXIT_OK
