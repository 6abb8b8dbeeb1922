"""`sqlcanary run`: evaluate a suite with an agent and write a RunResult."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.agents import AgentContext, make_agent
from bot.agents.env import agent_environment
from bot.agents.sandbox import Sandbox, agent_sandbox
from bot.base.errors import EXIT_BUG, EXIT_GATE, EXIT_OK, AgentError, ConfigError
from bot.base.results import LLMUsage, RunResult, write_run
from bot.base.settings import Settings
from bot.cases.loader import load_suite, parse_duration_ms, select_cases
from bot.cases.model import Case, Suite
from bot.commands.merge import in_shard, parse_shard
from bot.commands.request import RunRequest
from bot.config.model import Config, database_url, find_config
from bot.db.provision import provision
from bot.report.console import Progress, llm_usage_line, problem_lines, summary_table
from bot.run.cache import AnswerCache
from bot.run.fingerprint import AgentInputs, agent_fingerprint, kb_fingerprint, uses_answer_cache
from bot.run.runner import RunOptions, run_suite
from bot.scoring.presets import PRESETS

DEFAULT_OUT = "sqlcanary-results/run.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
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


@dataclass(frozen=True)
class AgentChoice:
    """The agent a run uses, before it is started: enough to fingerprint it."""

    spec: str
    options: dict[str, Any]
    base_dir: str
    timeout_s: float
    inputs: AgentInputs = AgentInputs()
    remote: bool = False

    def start(self, settings: Settings, sandbox: Sandbox | None = None):
        """The agent, started: a process agent gets only the allow-listed environment (plus `agent.env`), and
        every secret of `settings` is masked out of what it answers; with a sandbox, every process of the agent
        runs as its unprivileged user (bot.agents.sandbox)."""
        env = agent_environment(settings.environ, allow=self.inputs.env)
        return make_agent(
            self.spec,
            AgentContext(
                base_dir=self.base_dir,
                options=self.options,
                timeout_s=self.timeout_s,
                env=env,
                secrets=settings.secrets,
                settings=settings,
                sandbox=sandbox,
            ),
        )


def choose_agent(req: RunRequest, config: Config, *, cwd: str | None = None) -> AgentChoice:
    spec = req.agent or (config.agent.spec if config.agent else "gold")
    from_config = not req.agent and config.agent is not None
    timeout = req.agent_timeout or (config.agent.timeout if config.agent else 120.0)
    options = dict(config.agent.options) if config.agent and from_config else {}
    if req.persistent or (config.agent and from_config and config.agent.persistent):
        options["persistent"] = True
    base = config.base_dir if from_config else (cwd or os.getcwd())
    if spec.partition(":")[0].strip() == "llm" and config.config_file and "config" not in options:
        options["config"] = config.config_file  # the llm agent reads its `llm:` settings and `kb.paths` there
    declared = config.agent if from_config and config.agent else None
    inputs = AgentInputs(globs=declared.inputs, env=declared.env) if declared else AgentInputs()
    return AgentChoice(
        spec=spec,
        options=options,
        base_dir=base,
        timeout_s=timeout,
        inputs=inputs,
        remote=bool(declared and declared.remote),
    )


def fingerprints(
    choice: AgentChoice, config: Config, suite: Suite, settings: Settings, *, cwd: str | None = None
) -> tuple[str | None, str]:
    """(agent fingerprint, KB fingerprint) of a run of `suite` started in `cwd` (default: the current folder).
    The agent fingerprint is None when what the agent reads cannot be known: its answers are then not cached."""
    kb_fp = kb_fingerprint(config)
    agent_fp = agent_fingerprint(
        choice.spec,
        choice.options,
        choice.base_dir,
        kb_fp,
        cwd=cwd,
        inputs=choice.inputs,
        environ=settings.environ,
        exclude=suite.files,
    )
    return agent_fp, kb_fp


def answer_cache(
    req: RunRequest, config: Config, choice: AgentChoice, settings: Settings
) -> AnswerCache | None:
    enabled = config.cache.answers and not req.no_answer_cache and settings.answer_cache
    usable = enabled and uses_answer_cache(choice.spec) and not choice.remote
    return AnswerCache(settings.cache_dir) if usable else None


def suite_and_cases(req: RunRequest, config: Config) -> tuple[Suite, list[Case]]:
    """The suite (argument, else the config's `suite:`) and the cases the filters and --shard select."""
    suite_path = req.suite or (str(config.path(config.suite)) if config.suite else None)
    if not suite_path:
        raise ConfigError("no suite given: pass a suite folder or set `suite:` in sqlcanary.yml")
    suite = load_suite(suite_path)
    cases = select_cases(suite.cases, tags=list(req.tags) or None, ids=list(req.ids) or None)
    if not cases:
        raise ConfigError("no case matches the filters" if req.filters else "the suite has no cases")
    if req.shard:
        cases = [c for c in cases if in_shard(c.id, parse_shard(req.shard))]
    return suite, cases


class LLMJudge:
    """The `--llm-judge` diagnostic: one client (cache and budget of the config's `llm:`) for the whole run,
    its usage kept in the run's `meta.llm_judge`."""

    def __init__(self, config: Config, settings: Settings) -> None:
        from bot.llm import LLMClient
        from bot.llm.cache import ReplyCache

        self.client = LLMClient(
            config.llm, environ=settings.environ, cache=ReplyCache(settings.cache_dir / "llm")
        )

    def __call__(self, case: Case, sql: str):
        from bot.scoring.llm_judge import llm_judge_verdict

        return llm_judge_verdict(self.client, case.question, case.gold_sql[0], sql)

    def llm_usage(self) -> LLMUsage:
        from bot.llm.usage import usage_record

        return usage_record(self.client)


def run_options(
    req: RunRequest,
    config: Config,
    choice: AgentChoice,
    suite: Suite,
    settings: Settings,
    *,
    out: Path | None,
) -> RunOptions:
    jobs = req.jobs or config.jobs or 2
    timeout = req.statement_timeout or config.statement_timeout
    agent_fp, kb_fp = fingerprints(choice, config, suite, settings)
    return RunOptions(
        jobs=jobs,
        preset=req.preset or config.preset,
        statement_timeout_ms=parse_duration_ms(timeout, path="--statement-timeout", line=None)
        if timeout
        else None,
        row_cap=req.row_cap or config.row_cap,
        structural=req.structural,
        judge=LLMJudge(config, settings) if req.llm_judge else None,
        out=out,
        filters=req.filters,
        repeats=req.repeat,
        shard=str(parse_shard(req.shard)) if req.shard else None,
        agent_fingerprint=agent_fp or "",
        kb_fingerprint=kb_fp,
        answer_cache=answer_cache(req, config, choice, settings) if agent_fp else None,
    )


def main(args: argparse.Namespace, settings: Settings) -> int:
    return run_command(RunRequest.from_args(args), settings)


def run_command(req: RunRequest, settings: Settings) -> int:
    """`sqlcanary run` for a typed request: evaluate, print the summary, and say what the exit code means."""
    config = find_config(req.config, req.suite)
    suite, cases = suite_and_cases(req, config)
    out = Path(req.out or (str(config.path(config.out)) if config.out else DEFAULT_OUT))
    choice = choose_agent(req, config)
    with agent_sandbox(choice.spec) as (sandbox, isolation):
        opts = replace(run_options(req, config, choice, suite, settings, out=out), sandbox=isolation)
        return _evaluate(req, settings, config, suite, cases, choice, opts, sandbox)


def _evaluate(
    req: RunRequest,
    settings: Settings,
    config: Config,
    suite: Suite,
    cases: list[Case],
    choice: AgentChoice,
    opts: RunOptions,
    sandbox: Sandbox | None,
) -> int:
    """The run itself (the agent's sandbox, if any, is open): evaluate, print, and decide the exit code."""
    out = opts.out
    assert out is not None
    jobs = opts.jobs
    agent = choice.start(settings, sandbox)
    server = provision(
        dsn=database_url(req.dsn, config, settings.database_url),
        mode=req.postgres or config.postgres,
        cache_dir=settings.embedded_dir,
    )
    if not req.quiet:
        print(
            f"sqlcanary: suite {suite.name}: {len(cases)} case(s){_shard_note(opts)}, agent {agent.name}, "
            f"PostgreSQL {server.version} ({server.kind}), {jobs} worker(s){_sandbox_note(opts)}",
            file=sys.stderr,
        )
    progress = Progress(len(cases), enabled=not req.quiet, ci=settings.ci)
    try:
        run = run_suite(suite, cases, agent, server, opts, progress=progress)
    finally:
        progress.close()
    run = with_llm_usage(run, agent, out, judge=opts.judge)
    print(summary_table(run))
    problems = problem_lines(run)
    if problems:
        print("\nnot passed:\n" + problems)
    print(f"\nresults written to {out} ({run.meta.duration_s:.1f}s{_calls_note(run)})")
    if run.meta.llm is not None:
        print(llm_usage_line(run.meta.llm))
    if run.meta.llm_judge is not None:
        print("--llm-judge: " + llm_usage_line(run.meta.llm_judge))
    bugs = [c.id for c in run.cases if c.error_class == "internal_error"]
    if bugs:
        print(
            f"sqlcanary: {len(bugs)} case(s) hit an internal error (a bug): {', '.join(bugs[:10])}",
            file=sys.stderr,
        )
        return EXIT_BUG
    failed_agent = agent_failure(run)
    if failed_agent:
        raise AgentError(f"{failed_agent}; the results are in {out}")
    if req.min_pass_rate is not None:
        rate = run.summary.pass_rate or 0.0
        if rate < req.min_pass_rate:
            print(
                f"sqlcanary: pass rate {rate:.1%} is below --min-pass-rate {req.min_pass_rate:.1%}",
                file=sys.stderr,
            )
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


def _sandbox_note(opts: RunOptions) -> str:
    return f", agent sandbox {opts.sandbox}" if opts.sandbox else ""


def _shard_note(opts: RunOptions) -> str:
    return f" in shard {opts.shard}" if opts.shard else ""


def _calls_note(run: RunResult) -> str:
    m = run.meta
    repeat = f", {m.repeats} attempts per case" if m.repeats > 1 else ""
    cached = f", {m.cache_hits} answer(s) from the cache" if m.cache_hits else ""
    return f"; {m.agent_calls} agent call(s){cached}{repeat}"
