"""`sqlcanary action`: the GitHub Action's entry point (action.yml runs the image; its ENTRYPOINT is this).

`main()` alone reads the environment (the inputs, the runner's variables, the event payload) and builds the real
GitHub client; `action(...)` does the work and is what the tests call with a fake GitHub.

- pull_request (mode `check`): the base commit (the event's, fetched when the checkout lacks it) against the
  checkout; one sticky comment, one check run with annotations, the job summary, outputs; exit code from the gate.
- push (mode `baseline`): the suite at that commit, cached under the cache dir by everything that decides it, so
  a later pull request whose base is that commit makes no agent call for its base.
- workflow_dispatch (mode `sweep`): the suite (or one shard of it), the summary and the outputs.
- fork and Dependabot pull requests: evaluate only. No write request, no secret-backed LLM call; the comment and
  the check run are written to files for a `workflow_run` job to post.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

from bot.agents.sandbox import make_undumpable
from bot.base.errors import EXIT_BUG, ConfigError, SqlcanaryError
from bot.base.git import Git, git_environment, repo_root
from bot.base.secrets import secret_forms
from bot.base.settings import Settings
from bot.db.pgcache import kept_with_cache
from bot.github.check_step import baseline_step, check_step, untrusted_why
from bot.github.context import ActionContext
from bot.github.event import EventContext, load_event
from bot.github.inputs import Mode, RunnerContext, read_inputs
from bot.github.post_step import post_step
from bot.github.publish import Publisher
from bot.github.runnerfiles import lock_runner_files
from bot.github.sweep_step import sweep_leg_step, sweep_plan_step, sweep_report_step
from bot.github.workflow import StepLog, add_mask, error, notice
from bot.run.request import RunRequest

RESULTS_DIR = "sqlcanary-results"
_DEFAULT_MODE: dict[str, Mode] = {
    "pull_request": "check",
    "push": "baseline",
    "workflow_dispatch": "sweep",
    "workflow_run": "post",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run as a GitHub Action: reads INPUT_* and GITHUB_* from the environment (see action.yml)."
    )


def main(args: argparse.Namespace, settings: Settings) -> int:
    env = settings.environ
    # Before anything else is printed (::add-mask:: hides what comes after it): each secret and its encoded forms.
    for form in secret_forms(settings.secrets):
        for line in add_mask(form):
            print(line, flush=True)
    make_undumpable()  # no process of the PR's may read this one's memory or environment through /proc
    if env.get("GITHUB_ACTIONS") == "true":
        _one_log_stream()
    log = StepLog(sys.stdout)
    try:
        inputs = read_inputs(env)
        runner = RunnerContext.from_environ(env)
        event = load_event(runner.event_name, runner.event_path, sha=runner.sha)
        ctx = ActionContext(inputs=inputs, runner=runner, event=event, mode=inputs.mode or _mode(event))

        def make_github(token: str):
            from bot.github.client import make_github as make

            return make(token, api_url=runner.api_url)

        return action(ctx, settings, make_github=make_github, log=log)
    except SqlcanaryError as exc:  # its text may quote the PR (a case id): escaped, never printed raw
        log.command(error(str(exc), title="sqlcanary"))
        log.say(f"sqlcanary: error: {exc}")
        return exc.exit_code
    except Exception:  # noqa: BLE001 - a bug: the traceback, fenced (it may quote the PR too)
        with log.fenced():
            print("sqlcanary: internal error (a bug, please report it):", file=sys.stdout)
            traceback.print_exc(file=sys.stdout)
            sys.stdout.flush()
        return EXIT_BUG


def _one_log_stream() -> None:
    """On the runner: stderr (ours and every child's, which inherit it) into stdout, so the log is one stream
    in the order it was written, and a `::stop-commands::` fence printed before a child starts is read before
    anything the child prints (the runner reads two pipes concurrently)."""
    try:
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if out != err:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out, err)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)


def _mode(event: EventContext) -> Mode:
    return _DEFAULT_MODE[event.event_name]


def action_settings(settings: Settings, ctx: ActionContext, workdir: Path) -> Settings:
    """The action's settings: caches inside the workspace (for actions/cache), the inputs' LLM endpoint, and an
    environment for the evaluation that holds the LLM key only on a trusted event, and never the inputs."""
    inputs = ctx.inputs
    env = {k: v for k, v in settings.environ.items() if not k.startswith("INPUT_")}
    if inputs.openai_base_url:
        env["SQLCANARY_LLM_BASE_URL"] = inputs.openai_base_url
    if inputs.model:
        env["SQLCANARY_LLM_MODEL"] = inputs.model
    if ctx.trusted and inputs.openai_api_key:
        env["OPENAI_API_KEY"] = inputs.openai_api_key
    if not ctx.trusted:  # no secret-backed call: drop every secret the workflow put in the environment
        env = {k: v for k, v in env.items() if v not in settings.secrets}
    cache = Path(inputs.cache_dir)
    cache_dir = (cache if cache.is_absolute() else workdir / cache).resolve()
    env["SQLCANARY_CACHE_DIR"] = str(cache_dir)
    # The `database-url` input travels in each RunRequest (`dsn`), which wins over DATABASE_URL.
    return replace(settings, cache_dir=cache_dir, environ=MappingProxyType(env))


def _workdir(ctx: ActionContext) -> Path:
    workdir = (ctx.runner.workspace / ctx.inputs.working_directory).resolve()
    if not workdir.is_relative_to(ctx.runner.workspace) or not workdir.is_dir():
        raise ConfigError(
            f"input `working-directory`: {ctx.inputs.working_directory!r} is not a folder inside "
            "the workspace"
        )
    return workdir


def _run_request(ctx: ActionContext, out: str | None) -> RunRequest:
    i = ctx.inputs
    return RunRequest(
        suite=i.suite,
        config=i.config,
        repeat=i.repeat,
        perturb=i.perturb,
        dsn=i.database_url,
        out=out,
        quiet=True,
        sandbox="on",  # a pull request's code, or the base's beside it: never as root
        cwd=str(_workdir(ctx)),  # the inputs' paths start there; the process's current folder is left alone
    )


def action(
    ctx: ActionContext,
    settings: Settings,
    *,
    make_github: Any,
    git: Git | None = None,
    stream: TextIO | None = None,
    log: StepLog | None = None,
) -> int:
    """Do what the event asks; return the exit code (the gate's, unless `fail-on-regression` is false). What
    is printed meanwhile (by this process and the evaluation's child processes) is fenced off from the runner's
    command parser; our own workflow commands are printed after the fence.

    The three things the action talks to come in as arguments (py-cov-action's `action(config, github, git)`):
    `make_github(token)` builds the GitHub client, `git` is the checkout's repository (default: the repository
    holding the working directory), through which the checkout is verified and the base commit fetched."""
    log = log or StepLog(stream or sys.stdout)
    with log.fenced(), ExitStack() as cleanup:
        return _action(ctx, settings, make_github=make_github, git=git, log=log, cleanup=cleanup)


def _action(
    ctx: ActionContext,
    settings: Settings,
    *,
    make_github: Any,
    git: Git | None,
    log: StepLog,
    cleanup: ExitStack,
) -> int:
    if (
        os.name == "posix" and os.geteuid() == 0
    ):  # the agent runs as another user: keep it off the runner's files
        for path in lock_runner_files(settings.environ):
            log.say(
                f"sqlcanary: made {path} writable by its owner only (the pull request's code runs in this step)"
            )
    workdir = _workdir(ctx)
    root = repo_root(workdir, environ=settings.environ) or workdir
    git = git or Git(root, env=git_environment(settings.environ))
    run_settings = action_settings(settings, ctx, workdir)
    if ctx.mode in ("check", "baseline", "sweep") and not ctx.inputs.database_url:
        # In the image: the server's data lives in the cache dir, which actions/cache keeps (bot.db.pgcache).
        owner = ctx.runner.workspace.stat()
        run_settings = cleanup.enter_context(
            kept_with_cache(
                run_settings,
                owner=(owner.st_uid, owner.st_gid),
                repo=root,
                revs=("HEAD", *([ctx.event.head_sha] if ctx.event.head_sha else [])),
                say=lambda t: log.say(f"sqlcanary: {t}"),
            )
        )
    out_dir = workdir / RESULTS_DIR
    if ctx.mode == "repair":
        raise ConfigError(
            "input `mode`: `repair` runs within `check` (input `repair: true`); on a machine use "
            "`sqlcanary repair`"
        )
    if not ctx.trusted:
        why = untrusted_why(ctx.event)
        log.command(
            notice(
                f"{why}: sqlcanary evaluates only (no comment, no check run, no LLM key); the results and the "
                "comment are in the artifacts for a workflow_run job to post"
            )
        )
    publisher = Publisher(
        ctx=ctx,
        settings=run_settings,
        make_github=make_github if ctx.trusted else None,
        workdir=workdir,
        out_dir=out_dir,
        log=log,
    )
    if ctx.mode == "post":
        return post_step(ctx, run_settings, publisher, workdir=workdir, out_dir=out_dir)
    if ctx.mode == "sweep-plan":
        return sweep_plan_step(ctx, run_settings, publisher, workdir=workdir)
    if ctx.mode == "sweep-report":
        return sweep_report_step(ctx, run_settings, publisher, workdir=workdir, out_dir=out_dir)
    if ctx.mode == "check":
        return check_step(
            ctx, run_settings, publisher, git=git, out_dir=out_dir, request=_run_request(ctx, None)
        )
    if ctx.mode == "baseline":
        return baseline_step(run_settings, publisher, out_dir=out_dir, request=_run_request(ctx, None))
    return _sweep(ctx, run_settings, publisher, out_dir)


def _sweep(ctx: ActionContext, settings: Settings, publisher: Publisher, out_dir: Path) -> int:
    """One leg of a sweep: input `setting` (a matrix entry of `sweep-plan`) and `shard` (bot.github.sweep_step)."""
    return sweep_leg_step(ctx, settings, publisher, out_dir, _run_request(ctx, None))
