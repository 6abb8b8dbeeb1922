"""pytest's habits for a run: `--last-failed` (only the cases that did not pass in the last RunResult) and
`--exitfirst` (stop at the first case that does not pass, keep what was finished), and the interruption that
says where the finished cases went. bot.run.pipeline applies them around the runner."""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.base.results import CaseResult, RunResult, read_run, summarize
from bot.cases.model import Case
from bot.run.request import RunRequest

Say = Callable[[str], None]
Display = Callable[[CaseResult, int, int], None]


class FirstFailure(Exception):
    """Raised out of the runner at the first case that did not pass (`--exitfirst`); the runner writes what
    was finished (marked incomplete) before it lets go."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(f"stopped at {result.id} ({result.status})")
        self.result = result


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: still an interruption (exit 130), and it knows where the finished cases are."""

    def __init__(self, out: Path) -> None:
        super().__init__(str(out))
        self.out = out

    def finished(self) -> int | None:
        """How many cases the partial RunResult holds (None when it could not be written or read)."""
        try:
            return len(read_run(self.out).cases)
        except Exception:  # noqa: BLE001 - only a count for the message
            return None


def last_failed_request(req: RunRequest, out: Path, *, say: Say) -> tuple[RunRequest, RunResult | None]:
    """`req` narrowed to the cases that did not pass (failed, errored or invalid) in the RunResult at `out` (the
    run's `--out`, else the config's `out:`, else sqlcanary-results/run.json), within the user's own `--id`
    selection, and that run (its results are kept: `merged_over`). No such run, or nothing that failed in it:
    every selected case, said so (as pytest does), and no run to keep."""
    if not out.is_file():
        say(f"sqlcanary: --last-failed: no previous run at {out}: running every selected case")
        return req, None
    previous = read_run(out)
    failing = [c.id for c in previous.cases if c.status != "passed"]
    if req.ids:
        failing = [i for i in failing if any(i == g or fnmatch.fnmatchcase(i, g) for g in req.ids)]
    if not failing:
        say(f"sqlcanary: --last-failed: no case failed in {out}: running every selected case")
        return req, None
    say(f"sqlcanary: --last-failed: {len(failing)} case(s) that did not pass in {out}")
    return replace(req, ids=tuple(failing)), previous


def merged_over(previous: RunResult, latest: RunResult) -> RunResult:
    """The previous run with each case `latest` ran again replaced by its new result (as pytest keeps the state of
    every test, not only of those it re-ran): the file still covers the previous run's selection, and its summary
    counts every case. The meta is the latest run's (agent, fingerprints, time), with the previous selection."""
    again = {c.id: c for c in latest.cases}
    kept = {c.id for c in previous.cases}
    cases = tuple(again.get(c.id, c) for c in previous.cases) + tuple(
        c for c in latest.cases if c.id not in kept
    )
    meta = latest.meta.model_copy(
        update={"filters": previous.meta.filters, "complete": previous.meta.complete and latest.meta.complete}
    )
    return RunResult(meta=meta, summary=summarize(list(cases)), cases=cases)


class Stopper:
    """`--exitfirst`: remembers the first case that did not pass; the progress callback it wraps raises
    FirstFailure there, and the agent it wraps refuses further questions so the workers wind down at once."""

    def __init__(self, display: Display | None) -> None:
        self.display = display
        self.first: CaseResult | None = None
        self._lock = threading.Lock()

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        if self.display is not None:
            self.display(result, done, total)
        with self._lock:
            if result.status == "passed" or self.first is not None:
                return
            self.first = result
        raise FirstFailure(result)

    def agent(self, inner: Any) -> _StoppingAgent:
        return _StoppingAgent(inner, self)


class _StoppingAgent:
    """The run's agent, which answers nothing more once the run is stopping."""

    def __init__(self, inner: Any, stopper: Stopper) -> None:
        self._inner = inner
        self._stopper = stopper
        self.name = inner.name

    def answer(self, case: Case) -> Any:
        first = self._stopper.first
        if first is not None:
            raise FirstFailure(first)
        return self._inner.answer(case)

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:  # llm_usage(), and whatever else the agent offers
        return getattr(self._inner, name)
