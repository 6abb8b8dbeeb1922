"""What a person sees in the terminal: progress while the run goes, a summary table after.

Colour only on a terminal, and never when NO_COLOR is set to anything (https://no-color.org): a CI log or a pipe
gets plain lines. `--verbose` adds a line per case as it finishes; `--quiet` shows no progress at all."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from bot.base.results import CaseResult, Counts, LLMUsage, RunMeta, RunResult
from bot.base.textfilters import clean, one_line

# ANSI SGR codes, pytest's choices: green passes, red failures and errors, yellow what could not be judged.
_SGR = {"passed": "32", "failed": "31", "errored": "31;1", "invalid": "33", "bold": "1", "dim": "2"}
_RESET = "\x1b[0m"
_LABEL = {"passed": "PASSED", "failed": "FAILED", "invalid": "INVALID", "errored": "ERROR"}


def wants_colour(stream: TextIO, no_color: str | None) -> bool:
    """Colour when `stream` is a terminal and NO_COLOR is unset or empty."""
    isatty = getattr(stream, "isatty", None)
    return not no_color and callable(isatty) and bool(isatty())


class Paint:
    """Wraps text in a colour when enabled; plain text otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, role: str, text: str) -> str:
        code = _SGR.get(role)
        return f"\x1b[{code}m{text}{_RESET}" if self.enabled and code and text else text


PLAIN = Paint(False)


def _rate(c: Counts) -> str:
    rate = c.pass_rate
    return "-" if rate is None else f"{rate:.1%}"


def summary_table(run: RunResult, paint: Paint = PLAIN) -> str:
    rows: list[tuple[str, Counts]] = [("all", run.summary)]
    rows += [(f"category {k}", v) for k, v in run.summary.by_category.items()]
    rows += [(f"tag {k}", v) for k, v in run.summary.by_tag.items()]
    width = max(len(name) for name, _ in rows)
    head = f"{'':<{width}}  {'total':>6} {'passed':>7} {'failed':>7} {'invalid':>8} {'errored':>8} {'pass rate':>10}"
    lines = [paint("bold", head), "-" * len(head)]

    def cell(status: str, n: int, w: int) -> str:
        return paint(status, f"{n:>{w}}") if n else f"{n:>{w}}"

    for name, c in rows:
        lines.append(
            f"{name:<{width}}  {c.total:>6} {cell('passed', c.passed, 7)} {cell('failed', c.failed, 7)} "
            f"{cell('invalid', c.invalid, 8)} {cell('errored', c.errored, 8)} {_rate(c):>10}"
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


def problem_lines(run: RunResult, limit: int | None = 15, paint: Paint = PLAIN, width: int = 160) -> str:
    """What did not pass, a line each; `limit` None lists all and `--verbose` keeps the reasons whole."""
    bad = [c for c in run.cases if c.status != "passed"]
    shown = bad if limit is None else bad[:limit]
    out = [
        f"  {paint(c.status, f'{c.status:<8}')} {one_line(c.id)}: {one_line(c.reason)[:width]}" for c in shown
    ]
    if len(bad) > len(shown):
        out.append(f"  ... and {len(bad) - len(shown)} more (see the results file, or --verbose)")
    return "\n".join(out)


def totals_line(run: RunResult, paint: Paint = PLAIN) -> str:
    """pytest's last line: `2 failed, 12 passed, 1 invalid in 3.1s`, red when anything did not pass."""
    s = run.summary
    parts = [f"{n} {k}" for k, n in (("failed", s.failed), ("errored", s.errored), ("passed", s.passed))]
    parts += [f"{s.invalid} invalid"] if s.invalid else []
    shown = [p for p in parts if not p.startswith("0 ")] or ["no cases"]
    bad = s.failed or s.errored or s.invalid
    text = f"{', '.join(shown)} in {run.meta.duration_s:.1f}s"
    return paint("failed" if bad else "passed", text)


def case_line(result: CaseResult, done: int, total: int, paint: Paint = PLAIN) -> str:
    """`--verbose`: one finished case, `[3/15] FAILED shop-gmv: 3 of 6 rows differ; ...`."""
    label = paint(result.status, _LABEL.get(result.status, result.status.upper()))
    why = f": {one_line(result.reason)[:200]}" if result.status != "passed" and result.reason else ""
    return f"sqlcanary: [{done}/{total}] {label} {one_line(result.id)}{why}"


class Progress:
    """A tqdm bar on a terminal; plain progress lines in CI or when stderr is not a terminal. `verbose` adds a
    line per finished case (above the bar on a terminal); `colour` paints statuses."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        ci: bool = False,
        verbose: bool = False,
        colour: bool = False,
    ) -> None:
        self.total = total
        stream = stream if stream is not None else sys.stderr
        self.stream = stream
        self.enabled = enabled
        self.verbose = verbose and enabled
        self.paint = Paint(colour)
        self.counts = {"passed": 0, "failed": 0, "invalid": 0, "errored": 0}
        self._lock = threading.Lock()
        self._bar = None
        self._last_line = 0.0
        interactive = stream.isatty() and not ci
        if enabled and interactive:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                file=stream,
                unit="case",
                dynamic_ncols=True,
                leave=True,
                colour="green" if colour else None,
            )

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        with self._lock:
            self.counts[result.status] += 1
            if self.verbose:
                line = case_line(result, done, total, self.paint)
                if self._bar is not None:
                    self._bar.write(line, file=self.stream)
                else:
                    print(line, file=self.stream, flush=True)
            if self._bar is not None:
                if result.status != "passed" and self.paint.enabled:
                    self._bar.colour = "red"
                self._bar.set_postfix(self.counts, refresh=False)
                self._bar.update(1)
            elif self.enabled and not self.verbose:
                now = time.monotonic()
                if done == total or now - self._last_line >= 2.0 or done % max(1, total // 10) == 0:
                    self._last_line = now
                    parts = " ".join(f"{k} {v}" for k, v in self.counts.items())
                    print(f"sqlcanary: [{done}/{total}] {parts}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def perturb_line(run: RunResult) -> str:
    """`--perturb K`: how many passes the copies confirmed, how many were coincidental, and the time they took."""
    checked = [c for c in run.cases if "perturbed" in c.verdicts]
    coincidental = sum(1 for c in checked if c.verdicts["perturbed"].match is False)
    seconds = sum(c.timings.get("perturbed_s", 0.0) for c in run.cases)
    return (
        f"--perturb {run.meta.perturb}: {len(checked) - coincidental} pass(es) held on the perturbed copies, "
        f"{coincidental} coincidental (the gold's rows on the real data only); {seconds:.1f}s on the copies"
    )


def cache_line(m: RunMeta) -> str:
    """How many answers came from the answer cache, and why they were trusted (what keyed them)."""
    why = f"agent fingerprint {m.agent_fingerprint}" + (f": {m.cache_basis}" if m.cache_basis else "")
    line = f"{m.cache_hits} answer(s) from the answer cache ({why})"
    if m.reused_from:
        line += f"; the run of this same tree (judged {m.reused_from}) reused whole: nothing that decides a verdict changed"
    return line


def run_report(run: RunResult, out: Path, *, paint: Paint = PLAIN, verbose: bool = False) -> str:
    """What `sqlcanary run` prints when a run ends: the table, what did not pass, where the results are, the
    LLM usage of the agent and of `--llm-judge`, and the totals (pytest's last line). `verbose` lists every case
    that did not pass, with its whole reason."""
    lines = [summary_table(run, paint)]
    problems = problem_lines(run, None if verbose else 15, paint, width=100_000 if verbose else 160)
    if problems:
        lines.append("\nnot passed:\n" + problems)
    if run.summary.invalid:
        lines.append(
            f"\n{paint('invalid', f'{run.summary.invalid} case(s) invalid')}: their gold SQL does not run, so they "
            "judge nothing and are left out of the pass rate"
        )
    m = run.meta
    repeat = f", {m.repeats} attempts per case" if m.repeats > 1 else ""
    cached = f", {cache_line(m)}" if m.cache_hits else ""
    partial = "" if m.complete else "; incomplete: the run stopped early"
    lines.append(
        f"\nresults written to {out} ({m.duration_s:.1f}s; {m.agent_calls} agent call(s){cached}{repeat}{partial})"
    )
    if m.perturb:
        lines.append(perturb_line(run))
    if m.llm is not None:
        lines.append(llm_usage_line(m.llm))
    if m.llm_judge is not None:
        lines.append("--llm-judge: " + llm_usage_line(m.llm_judge))
    lines.append(totals_line(run, paint))
    return "\n".join(lines)


def agent_output(case_id: str, stderr: str) -> str:
    """`show`: what an errored case's agent wrote on stderr (its whole traceback), indented under a heading;
    control characters dropped, so the agent's text cannot move the cursor or recolour the terminal."""
    text = clean(stderr).replace("\r", "")
    body = "\n".join(f"    {line}" for line in text.rstrip().splitlines())
    return f"\nagent stderr ({one_line(case_id)}; the last 4000 characters the run kept):\n{body}\n"
