"""`sqlcanary check [--base REF] [--head REF]`: the local pull-request check; `run_check` is what it and the
GitHub Action both call.

Head is the working tree (or a worktree of --head); base is a temporary `git worktree` of the base commit.
Each is evaluated by `sqlcanary run` in its own process (an in-process Python agent of one tree must never
serve the other), then compared. A base run is cached under the cache folder's `runs/`, keyed by everything that
decides its result; answers are cached by agent fingerprint, so an unchanged KB costs no agent call.
"""

from __future__ import annotations

import argparse
import sys

from bot.agents.sandbox import make_undumpable
from bot.base.errors import EXIT_INTERRUPTED
from bot.base.settings import Settings
from bot.check.pipeline import DEFAULT_OUT_DIR, run_check
from bot.check.request import CheckRequest
from bot.commands.common import add_gate_arguments, add_run_arguments
from bot.compare.gate import GATE_FIELDS
from bot.report.compare_text import render_summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", nargs="?", help="suite folder or file (default: `suite` in sqlcanary.yml)")
    p.add_argument(
        "--base",
        help="the commit to compare with (default: origin/$SQLCANARY_BASE_BRANCH, origin/main, main)",
    )
    p.add_argument("--head", help="the commit under review (default: the working tree, as it is)")
    p.add_argument("--config", help="sqlcanary.yml (default: the suite folder's, then ./sqlcanary.yml)")
    add_run_arguments(p)
    p.add_argument(
        "--out",
        help=f"folder for base.json, head.json, comparison.json, comment.md, report.html (default: {DEFAULT_OUT_DIR})",
    )
    p.add_argument("--force", action="store_true", help="compare even when fixtures or settings differ")
    p.add_argument("--no-base-cache", action="store_true", help="evaluate the base even when a run is cached")
    p.add_argument(
        "--attribute-calls",
        type=int,
        metavar="N",
        help="find which KB change broke each regressed case by reverting the changes and asking the agent "
        "again (delta debugging), with at most N agent calls; also verifies a partial revert (default: off)",
    )
    add_gate_arguments(p)


def main(args: argparse.Namespace, settings: Settings) -> int:
    make_undumpable()  # the pull request's agent must not read this process's memory or environment
    req = CheckRequest.from_args(args, gate_flags=GATE_FIELDS)

    def say(text: str) -> None:
        if not req.run.quiet:
            print(f"sqlcanary check: {text}", file=sys.stderr)

    try:
        result = run_check(req, settings, say=say)
    except KeyboardInterrupt:
        out_dir = (req.run.folder / (req.out_dir or DEFAULT_OUT_DIR)).resolve()
        print(
            f"sqlcanary check: interrupted: what the base and head runs finished is kept in {out_dir} "
            "(base.json, head.json; marked incomplete)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(render_summary(result.comparison))
    print(f"\nresults in {result.out_dir}: {', '.join(result.files)}")
    return result.exit_code
