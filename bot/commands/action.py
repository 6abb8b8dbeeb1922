"""`sqlcanary action`: the GitHub Action's entry point (action.yml runs the image; its ENTRYPOINT is this).

`main()` alone reads the environment (the inputs, the runner's variables, the event payload), finds the mode
(bot.modes.find_mode) and builds the real GitHub client; `action(...)` sets up what every mode uses and runs the
mode's script (bot.modes.MODES); it is what the tests call with a fake GitHub.

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
from typing import Any, TextIO

from bot.agents.sandbox import make_undumpable
from bot.base.errors import EXIT_BUG, SqlcanaryError
from bot.base.git import Git
from bot.base.secrets import secret_forms
from bot.base.settings import Settings
from bot.github.context import ActionContext
from bot.github.event import load_event
from bot.github.inputs import RunnerContext, read_inputs
from bot.github.workflow import StepLog, add_mask, error
from bot.modes import MODES, find_mode
from bot.modes.setup import prepare_step


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
        ctx = ActionContext(inputs=inputs, runner=runner, event=event, mode=find_mode(event, inputs))

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
        mode = MODES[ctx.mode]  # what every mode uses (bot.modes.setup), then the mode's script
        step = prepare_step(
            ctx,
            settings,
            make_github=make_github,
            git=git,
            log=log,
            cleanup=cleanup,
            evaluates=mode.evaluates,
        )
        return mode.run(ctx, step)
