"""What every mode of the Action uses, set up once before its script runs: the runner's files locked, the working
directory, the checkout's repository, the evaluation's settings, the embedded PostgreSQL (for a mode that
evaluates, without input `database-url`), the notice of an untrusted event, the publisher, the run the inputs ask
for."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bot.base.errors import ConfigError
from bot.base.git import Git, git_environment, repo_root
from bot.base.settings import Settings
from bot.db.pgcache import kept_with_cache
from bot.github.context import ActionContext
from bot.github.event import untrusted_why
from bot.github.inputs import ActionInputs
from bot.github.publish import Publisher
from bot.github.runnerfiles import lock_runner_files
from bot.github.workflow import StepLog, notice
from bot.modes.step import Step
from bot.run.request import RunRequest

RESULTS_DIR = "sqlcanary-results"


def prepare_step(
    ctx: ActionContext,
    settings: Settings,
    *,
    make_github: Any,
    git: Git | None,
    log: StepLog,
    cleanup: ExitStack,
    evaluates: bool = False,
) -> Step:
    """The services of `Step`; what is to be undone when the step ends (the embedded server a mode that
    `evaluates` the suite starts) goes on `cleanup`."""
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
    if evaluates and not ctx.inputs.database_url:
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
    if not ctx.trusted:
        why = untrusted_why(ctx.event)
        log.command(
            notice(
                f"{why}: sqlcanary evaluates only (no comment, no check run, no LLM key); the results and the "
                "comment are in the artifacts for a workflow_run job to post"
            )
        )
    out_dir = workdir / RESULTS_DIR
    publisher = Publisher(
        ctx=ctx,
        settings=run_settings,
        make_github=make_github if ctx.trusted else None,
        workdir=workdir,
        out_dir=out_dir,
        log=log,
    )
    return Step(run_settings, publisher, git, workdir, out_dir, request=_run_request(ctx.inputs, workdir))


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


def _run_request(inputs: ActionInputs, workdir: Path) -> RunRequest:
    """The run the inputs ask for (a mode adds its shard, its output file, its setting)."""
    return RunRequest(
        suite=inputs.suite,
        config=inputs.config,
        repeat=inputs.repeat,
        perturb=inputs.perturb,
        dsn=inputs.database_url,
        out=None,
        quiet=True,
        sandbox="on",  # a pull request's code, or the base's beside it: never as root
        cwd=str(workdir),  # the inputs' paths start there; the process's current folder is left alone
    )
