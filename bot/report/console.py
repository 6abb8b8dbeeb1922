"""What a person sees in the terminal: progress while the run goes, a summary table after."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from bot.base.results import CaseResult, Counts, LLMUsage, RunResult


def _rate(c: Counts) -> str:
    rate = c.pass_rate
    return "-" if rate is None else f"{rate:.1%}"


def summary_table(run: RunResult) -> str:
    rows: list[tuple[str, Counts]] = [("all", run.summary)]
    rows += [(f"category {k}", v) for k, v in run.summary.by_category.items()]
    rows += [(f"tag {k}", v) for k, v in run.summary.by_tag.items()]
    width = max(len(name) for name, _ in rows)
    head = f"{'':<{width}}  {'total':>6} {'passed':>7} {'failed':>7} {'invalid':>8} {'errored':>8} {'pass rate':>10}"
    lines = [head, "-" * len(head)]
    for name, c in rows:
        lines.append(
            f"{name:<{width}}  {c.total:>6} {c.passed:>7} {c.failed:>7} {c.invalid:>8} {c.errored:>8} "
            f"{_rate(c):>10}"
        )
    return "\n".join(lines)


def llm_usage_line(u: LLMUsage) -> str:
    """One line: requests sent, replies from the cache, tokens, cost, and how the replies parsed."""
    cost = "cost n/a (no price for the model in llm.prices)" if u.cost_usd is None else f"${u.cost_usd:.4f}"
    parsed = f"replies parsed {u.parse_ok} as sent, {u.parse_repaired} repaired, {u.parse_failed} unusable"
    return (
        f"LLM {u.model}: {u.calls} request(s), {u.cached_calls} from the cache, {u.prompt_tokens:,} prompt + "
        f"{u.completion_tokens:,} completion tokens, {cost}; {parsed}"
    )


def problem_lines(run: RunResult, limit: int = 15) -> str:
    bad = [c for c in run.cases if c.status != "passed"]
    out = [f"  {c.status:<8} {c.id}: {c.reason[:160]}" for c in bad[:limit]]
    if len(bad) > limit:
        out.append(f"  ... and {len(bad) - limit} more (see the results file)")
    return "\n".join(out)


class Progress:
    """A tqdm bar on a terminal; plain progress lines in CI or when stderr is not a terminal."""

    def __init__(
        self, total: int, *, stream: TextIO | None = None, enabled: bool = True, ci: bool = False
    ) -> None:
        self.total = total
        stream = stream if stream is not None else sys.stderr
        self.stream = stream
        self.enabled = enabled
        self.counts = {"passed": 0, "failed": 0, "invalid": 0, "errored": 0}
        self._lock = threading.Lock()
        self._bar = None
        self._last_line = 0.0
        interactive = stream.isatty() and not ci
        if enabled and interactive:
            from tqdm import tqdm

            self._bar = tqdm(total=total, file=stream, unit="case", dynamic_ncols=True, leave=True)

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        with self._lock:
            self.counts[result.status] += 1
            if self._bar is not None:
                self._bar.set_postfix(self.counts, refresh=False)
                self._bar.update(1)
            elif self.enabled:
                now = time.monotonic()
                if done == total or now - self._last_line >= 2.0 or done % max(1, total // 10) == 0:
                    self._last_line = now
                    parts = " ".join(f"{k} {v}" for k, v in self.counts.items())
                    print(f"sqlcanary: [{done}/{total}] {parts}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_report(run: RunResult, out: Path) -> str:
    """What `sqlcanary run` prints when a run ends: the table, what did not pass, where the results are, and the
    LLM usage of the agent and of `--llm-judge`."""
    lines = [summary_table(run)]
    problems = problem_lines(run)
    if problems:
        lines.append("\nnot passed:\n" + problems)
    m = run.meta
    repeat = f", {m.repeats} attempts per case" if m.repeats > 1 else ""
    cached = f", {m.cache_hits} answer(s) from the cache" if m.cache_hits else ""
    lines.append(
        f"\nresults written to {out} ({m.duration_s:.1f}s; {m.agent_calls} agent call(s){cached}{repeat})"
    )
    if m.llm is not None:
        lines.append(llm_usage_line(m.llm))
    if m.llm_judge is not None:
        lines.append("--llm-judge: " + llm_usage_line(m.llm_judge))
    return "\n".join(lines)
