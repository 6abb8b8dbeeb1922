"""`sqlcanary show RUN.json [CASE_ID...] [--base BASE.json]`: one case or a few of a saved run, in the terminal,
with what the reports say of it (question, verdict, cause, first and structural difference, gold SQL, base → head
prediction diff), for a failed case the first rows of each side (when the run recorded them), and for an errored
case what its agent wrote on stderr (a whole traceback, not only the last line the reason quotes). No case id:
every failing case. An unknown id exits 2 naming the closest ids.

Where the base comes from: `--base`, else the `comparison.json` that `sqlcanary check` wrote beside the run (it
also holds the cause links and the gold SQL), else the gold SQL the run recorded for a case that did not pass.
Gold SQL missing from all is read from the run's suite when that folder still exists."""

from __future__ import annotations

import argparse
import difflib
from dataclasses import replace
from pathlib import Path

from bot.base.errors import EXIT_OK, ConfigError, SqlcanaryError
from bot.base.results import RunResult, read_run
from bot.base.settings import Settings
from bot.cases.loader import load_suite
from bot.compare.comparison import Comparison, compare_runs
from bot.report.console import agent_output
from bot.report.render import render_cases_text
from bot.report.samples_text import samples_text
from bot.report.view import CaseRow, row_from_case, row_from_change

CLOSEST = 5


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_file", metavar="RUN.json", help="a saved RunResult (head.json of a check, or a run)")
    p.add_argument(
        "ids", metavar="CASE_ID", nargs="*", help="the cases to show (default: every failing case)"
    )
    p.add_argument("--base", metavar="BASE.json", help="the base run: shows the base → head prediction diff")


def _comparison(run_file: Path, run: RunResult, base_file: str | None) -> Comparison | None:
    if base_file:
        return compare_runs(read_run(base_file), run, force=True)
    beside = run_file.parent / "comparison.json"
    if not beside.is_file():
        return None
    try:
        cmp = Comparison.model_validate_json(beside.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return cmp if cmp.head == run.meta else None  # another run's comparison says nothing of this one


def _suite_gold(run: RunResult) -> dict[str, tuple[str, ...]]:
    path = run.meta.suite_path
    if not path or not Path(path).exists():
        return {}
    try:
        return {c.id: tuple(c.gold_sql) for c in load_suite(path).cases}
    except SqlcanaryError:
        return {}


def _rows(run: RunResult, cmp: Comparison | None) -> dict[str, CaseRow]:
    rows = {c.id: row_from_change(c, cmp) for c in cmp.cases} if cmp is not None else {}
    return rows | {c.id: row_from_case(c) for c in run.cases if c.id not in rows}


def _unknown(wanted: str, known: list[str], run_file: str) -> ConfigError:
    close = difflib.get_close_matches(wanted, known, n=CLOSEST, cutoff=0.4)
    hint = f"; the closest: {', '.join(close)}" if close else f" ({len(known)} cases in it)"
    return ConfigError(f"no case {wanted!r} in this run{hint}", path=run_file)


def main(args: argparse.Namespace, settings: Settings) -> int:
    run_file = Path(args.run_file)
    run = read_run(run_file)
    cmp = _comparison(run_file, run, args.base)
    rows = _rows(run, cmp)
    if args.ids:
        for wanted in args.ids:
            if wanted not in rows:
                raise _unknown(wanted, list(rows), str(run_file))
        picked = [rows[i] for i in dict.fromkeys(args.ids)]
    else:
        failing = {c.id for c in run.cases if c.status in ("failed", "errored")}
        picked = [r for i, r in rows.items() if i in failing or r.judged == "regressed"]
        if not picked:
            print(f"no failing case in {run_file} ({len(run.cases)} cases)")
            return EXIT_OK
    if any(not r.gold_sql for r in picked):
        gold = _suite_gold(run)
        picked = [r if r.gold_sql else replace(r, gold_sql=gold.get(r.id, ())) for r in picked]
    stderr = {c.id: c.prediction.stderr for c in run.cases if c.status == "errored" and c.prediction.stderr}
    results = {c.id: c for c in run.cases}
    for row in picked:  # an errored case: what its agent said, whole (the reason holds only its last line)
        print(render_cases_text([row]), end="")
        if row.id in results and results[row.id].status == "failed":
            print(f"\n{samples_text(results[row.id])}")  # the first rows of each side, when recorded
        if row.id in stderr:
            print(agent_output(row.id, stderr[row.id] or ""), end="")
    return EXIT_OK
