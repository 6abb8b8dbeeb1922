"""A run from a typed request: find the config, select the cases, build the agent in its sandbox, provision
PostgreSQL, evaluate, and keep what the run says besides its cases (the LLM usage of its agent and judge). Then
what its exit code is (`run_exit`): a bug, an agent that failed on every case (a broken setup, not a 0% pass rate),
an invalid case (a gold that does not run is bad input), a run `--exitfirst` stopped, errored cases under
`--fail-on-errored`, a pass rate under the floor. `sqlcanary run`, `rescore` and the Action's sweep call it; how it
is shown is theirs. `--last-failed` and `--exitfirst` are decided here too (bot.run.rerun picks the cases)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.agents.sandbox import sandboxed_start
from bot.base.errors import EXIT_BAD_INPUT, EXIT_BUG, EXIT_GATE, EXIT_OK, AgentError
from bot.base.results import CaseResult, RunResult, read_run, write_run
from bot.base.settings import Settings
from bot.cases.sqlparse import remembered
from bot.config.model import find_config
from bot.run.request import RunRequest
from bot.run.rerun import FirstFailure, RunInterrupted, Stopper, last_failed_request, merged_over
from bot.run.reuse import cached_head_run, head_run_key, keep_head_run, may_reuse
from bot.run.runner import run_suite
from bot.run.server import provision_server
from bot.run.setup import choose_agent, run_options, suite_and_cases, suite_loader

DEFAULT_OUT = "sqlcanary-results/run.json"
Say = Callable[[str], None]


@dataclass(frozen=True)
class Evaluated:
    run: RunResult
    out: Path  # where the RunResult was written
    stopped_at: CaseResult | None = None  # `--exitfirst`: the case that stopped the run


def evaluate_request(
    req: RunRequest,
    settings: Settings,
    *,
    say: Say = lambda _: None,
    progress: Callable[[int], Any] | None = None,
) -> Evaluated:
    """Evaluate `req` and write its RunResult; `say` gets one line about the setup, `progress(n_cases)` makes the
    progress display the runner updates (it must have `close()`)."""
    req = req.anchored()
    config = find_config(req.config, req.suite, cwd=req.folder)
    out = Path(req.out or (str(config.path(config.out)) if config.out else req.folder / DEFAULT_OUT))
    previous = (
        None  # `--last-failed`: the run whose failing cases run again, and whose other results are kept
    )
    if req.last_failed:
        req, previous = last_failed_request(req, out, say=say)
    with remembered(settings.cache_dir / "sql-parse"):  # a gold that parsed before is not parsed to load it
        suite, cases = suite_and_cases(req, config, load=suite_loader(req))
    choice = choose_agent(req, config, cwd=str(req.folder))
    opts = run_options(req, config, choice, suite, settings, out=out)
    server, key = None, None
    if may_reuse(req, config, opts):  # a check's head: its whole run may be in the cache (bot.run.reuse)
        server = provision_server(req.dsn, config, settings, req.postgres)
        key = head_run_key(
            req, config, suite, cases, opts, server, spec=choice.spec, agent_timeout=choice.timeout_s
        )
        reused = cached_head_run(key, settings)
        if reused is not None:  # the head's tree, config, suite and fixtures as another check judged them
            write_run(out, reused[0])
            say(
                f"sqlcanary: suite {suite.name}: {len(cases)} case(s): the run of this same tree is reused "
                f"from {reused[1]} (nothing that decides a verdict changed; SQLCANARY_ANSWER_CACHE=off judges "
                "again)"
            )
            return Evaluated(run=reused[0], out=out)
    started = sandboxed_start(
        choice.spec, lambda box: choice.start(settings, box, suite), policy=req.sandbox_policy, warn=_warn
    )
    with started as (agent, isolation):  # an agent that cannot start is said before any database error
        opts = replace(opts, sandbox=isolation)
        server = server or provision_server(req.dsn, config, settings, req.postgres)
        shard = f" in shard {opts.shard}" if opts.shard else ""
        boxed = f", agent sandbox {opts.sandbox}" if opts.sandbox else ""
        say(
            f"sqlcanary: suite {suite.name}: {len(cases)} case(s){shard}, agent {agent.name}, "
            f"PostgreSQL {server.version} ({server.kind}), {opts.jobs} worker(s){boxed}"
        )
        shown = progress(len(cases)) if progress else None
        stopper = Stopper(shown) if req.exitfirst else None
        stopped = None
        try:
            if stopper is None:
                run = run_suite(suite, cases, agent, server, opts, progress=shown)
            else:
                run = run_suite(suite, cases, stopper.agent(agent), server, opts, progress=stopper)
        except FirstFailure as exc:  # the runner wrote what was finished to `out` before it let go
            run, stopped = read_run(out), (stopper.first if stopper and stopper.first else exc.result)
        except KeyboardInterrupt as exc:
            if previous is not None and out.is_file():  # what finished, over the previous run's results
                write_run(out, merged_over(previous, read_run(out)))
            raise RunInterrupted(out) from exc
        finally:
            if shown is not None:
                shown.close()
        run = with_llm_usage(run, agent, out, judge=opts.judge)
        if stopped is None:
            keep_head_run(key, run, settings)
    if previous is not None:
        write_run(out, merged_over(previous, run))
        say(
            f"sqlcanary: --last-failed: {len(run.cases)} case(s) run again; {out} keeps the results of the "
            f"other {len(previous.cases) - len(run.cases)} from the previous run"
        )
    return Evaluated(run=run, out=out, stopped_at=stopped)


def _warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_exit(done: Evaluated, req: RunRequest, *, say: Say = lambda _: None) -> int:
    """The exit code of a finished run: 3 when a case hit a bug; 2 (AgentError) when the agent failed on every
    case; 2 when a case is invalid (its gold does not run: bad input), unless `allow_invalid`; 1 when
    `--exitfirst` stopped the run, when a case errored under `--fail-on-errored`, or under `--min-pass-rate`;
    else 0. `say` gets the lines that explain a non-zero code."""
    run = done.run
    bugs = [c.id for c in run.cases if c.error_class == "internal_error"]
    if bugs:
        say(f"sqlcanary: {len(bugs)} case(s) hit an internal error (a bug): {', '.join(bugs[:10])}")
        return EXIT_BUG
    failed_agent = agent_failure(run)
    if failed_agent:
        raise AgentError(f"{failed_agent}; the results are in {done.out}")
    invalid = [c for c in run.cases if c.status == "invalid"]
    if invalid and not req.allow_invalid:
        for c in invalid[:10]:
            where = f"{c.source}: " if c.source else ""
            say(f"sqlcanary: error: {where}case {c.id} is invalid: {c.reason}")
        more = f" (and {len(invalid) - 10} more)" if len(invalid) > 10 else ""
        say(
            f"sqlcanary: {len(invalid)} case(s) invalid{more}: a gold that does not run judges nothing and is left "
            f"out of the pass rate; fix the case (or pass --allow-invalid to only report it); results in {done.out}"
        )
        return EXIT_BAD_INPUT
    if done.stopped_at is not None:
        c = done.stopped_at
        say(
            f"sqlcanary: stopped at the first case that did not pass (--exitfirst): {c.id} {c.status}; "
            f"the {len(run.cases)} case(s) finished are in {done.out}"
        )
        return EXIT_GATE
    errored = [c.id for c in run.cases if c.status == "errored"]
    if errored and req.fail_on_errored:
        more = f" and {len(errored) - 10} more" if len(errored) > 10 else ""
        say(f"sqlcanary: {len(errored)} case(s) errored (--fail-on-errored): {', '.join(errored[:10])}{more}")
        return EXIT_GATE
    if req.min_pass_rate is not None:
        rate = run.summary.pass_rate or 0.0
        if rate < req.min_pass_rate:
            say(f"sqlcanary: pass rate {rate:.1%} is below --min-pass-rate {req.min_pass_rate:.1%}")
            return EXIT_GATE
    return EXIT_OK


def with_llm_usage(run: RunResult, agent: object, out: Path, *, judge: object = None) -> RunResult:
    """The run with its agent's LLM usage in `meta.llm` (an agent that calls an LLM says so with
    `llm_usage()`) and the `--llm-judge`'s in `meta.llm_judge`, written again to `out`; a run with neither is
    returned as it is."""
    update = {}
    for key, holder in (("llm", agent), ("llm_judge", judge)):
        usage_of = getattr(holder, "llm_usage", None)
        if callable(usage_of):
            update[key] = usage_of()
    if not update:
        return run
    run = run.model_copy(update={"meta": run.meta.model_copy(update=update)})
    write_run(out, run)
    return run


def agent_failure(run: RunResult) -> str | None:
    """The reason when the agent answered no case at all (it cannot start, or fails every time): that is a broken
    setup to report as such (exit 2), not a pass rate of 0% to compare."""
    failed = [c for c in run.cases if c.status == "errored" and (c.error_class or "").startswith("agent_")]
    if not run.cases or len(failed) < len(run.cases):
        return None
    return f"the agent ({run.meta.agent}) failed on every case ({len(failed)}), e.g. {failed[0].id}: {failed[0].reason}"
