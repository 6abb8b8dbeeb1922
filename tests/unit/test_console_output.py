"""The terminal output of a run (bot.report.console): colour only on a terminal and never under NO_COLOR,
`--verbose` lines per case, and agent text that cannot colour the terminal itself."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.base.results import CaseResult, RunMeta, RunResult, summarize
from bot.report.console import Paint, Progress, agent_output, problem_lines, run_report, wants_colour


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(*cases: CaseResult) -> RunResult:
    meta = RunMeta(suite="s", suite_hash="h", server_version="18", agent="gold", duration_s=1.5)
    return RunResult(meta=meta, summary=summarize(list(cases)), cases=cases)


OUT = Path("r.json")
PASSED = CaseResult(id="a", status="passed", category="query")
FAILED = CaseResult(id="b", status="failed", category="query", reason="1 of 1 row differs")
ERRORED = CaseResult(id="c", status="errored", category="query", reason="agent: crashed")


@pytest.mark.parametrize(
    ("stream", "no_color", "colour"),
    [(_Tty(), None, True), (_Tty(), "", True), (_Tty(), "1", False), (io.StringIO(), None, False)],
)
def test_colour_only_on_a_terminal_without_no_color(stream, no_color, colour) -> None:
    assert wants_colour(stream, no_color) is colour


def test_the_report_is_coloured_only_when_asked() -> None:
    run = _run(PASSED, FAILED, ERRORED)
    coloured = run_report(run, OUT, paint=Paint(True))
    plain = run_report(run, OUT)
    assert "\x1b[32m" in coloured and "\x1b[31m" in coloured  # green passes, red failures
    assert "\x1b[" not in plain
    assert plain.splitlines()[-1] == "1 failed, 1 errored, 1 passed in 1.5s"  # pytest's last line


def test_verbose_progress_prints_a_line_per_case_without_colour_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(3, stream=stream, verbose=True, colour=False)
    for i, case in enumerate((PASSED, FAILED, ERRORED), start=1):
        progress(case, i, 3)
    progress.close()
    assert stream.getvalue().splitlines() == [
        "sqlcanary: [1/3] PASSED a",
        "sqlcanary: [2/3] FAILED b: 1 of 1 row differs",
        "sqlcanary: [3/3] ERROR c: agent: crashed",
    ]


def test_quiet_progress_prints_nothing() -> None:
    stream = io.StringIO()
    progress = Progress(1, stream=stream, enabled=False, verbose=True)
    progress(FAILED, 1, 1)
    assert stream.getvalue() == ""


def test_an_agents_text_cannot_colour_the_terminal() -> None:
    hostile = CaseResult(id="d", status="failed", category="query", reason="\x1b[2J\x1b[31mgotcha")
    assert "\x1b" not in problem_lines(_run(hostile), paint=Paint(False))
    shown = agent_output("d", "Traceback (most recent call last):\n  \x1b[8mhidden\r\nValueError: x\n")
    assert "\x1b" not in shown and "\r" not in shown
    assert "    Traceback (most recent call last):" in shown and "    ValueError: x" in shown


def test_verbose_lists_every_problem_with_its_whole_reason() -> None:
    long = "x" * 400
    cases = [CaseResult(id=f"f{i}", status="failed", category="query", reason=long) for i in range(20)]
    run = _run(*cases)
    assert "... and 5 more" in run_report(run, OUT)
    verbose = run_report(run, OUT, verbose=True)
    assert "more" not in verbose and verbose.count(long) == 20
