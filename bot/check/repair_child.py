"""The Action's repair loop (bot.repair.request.run_repair) in a child process of its own, as attribution is
(bot.check.causes_child): the process that holds the GitHub and repair tokens never reads the head's KB, never
puts it in a prompt and never starts the head's agent for the repair.

The child gets the environment `child_environment` builds for the head, and the LLM key the base's config names
(`llm.api_key_env`: the repair asks that model); never a GitHub token nor any `INPUT_*`. It works in the
checkout's KB inside the loop's transaction (bot.repair.transaction: journaled, so a killed repair is put back by
the next), reads the texts of the files it changed, and puts every KB file back as it was before it replies. The
reply (the outcome and those texts) is JSON, read back size-bounded, validated and masked (bot.check.apart); the
repair pull request carries the texts to GitHub."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from bot.base.results import FrozenModel, RunResult
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.cases.suite_doc import SuiteDoc
from bot.check.apart import run_apart, serve_apart
from bot.check.child import child_environment
from bot.compare.comparison import Comparison
from bot.config.model import Config
from bot.db.provision import Server
from bot.kb.files import MAX_FILE_BYTES, KBFiles, write_bytes_atomic
from bot.repair.outcome import RepairOutcome
from bot.repair.request import RepairRequest, run_repair
from bot.repair.setup import Limits

MAX_REPLY_BYTES = 256 * 1024 * 1024  # the loop's record and the KB files it changed (each at most 256 KiB)


class RepairJob(FrozenModel):
    """What the repair is asked: the head's run of its suite under its config, the check's comparison (the cause
    links for the prompts) and the regressed cases to repair."""

    run: RunResult
    config: Config
    suite: SuiteDoc
    limits: Limits
    base_pass_rate: float | None = None
    comparison: Comparison | None = None
    only: tuple[str, ...] | None = None


class RepairReply(FrozenModel):
    outcome: RepairOutcome
    changed: dict[str, str]  # {KB path relative to the config's folder: its text after the repair}


def repair_apart(
    run: RunResult,
    config: Config,
    suite: Suite,
    *,
    limits: Limits,
    base_pass_rate: float | None,
    comparison: Comparison | None,
    only: tuple[str, ...] | None,
    server: Server,
    settings: Settings,
    cwd: Path,
) -> RepairReply:
    """The repair loop in a child with the head's allow-listed environment and the repair model's key; what it
    changed, read back as data. The checkout's KB is as it was when this returns."""
    job = RepairJob(
        run=run,
        config=config,
        suite=SuiteDoc.of(suite),
        limits=limits,
        base_pass_rate=base_pass_rate,
        comparison=comparison,
        only=only,
    )
    return run_apart(
        "bot.check.repair_child",
        job,
        RepairReply,
        env=repair_environment(settings, config, server),
        cwd=cwd,
        settings=settings,
        max_bytes=MAX_REPLY_BYTES,
        what="the repair loop",
    )


def repair_environment(settings: Settings, config: Config, server: Server) -> dict[str, str]:
    """The head's child environment (bot.check.child) and the key of the model the repair asks."""
    env = child_environment(settings, config, server)
    key = config.llm.api_key_env
    if key in settings.environ:
        env[key] = settings.environ[key]
    return env


def _work(job: RepairJob, settings: Settings) -> RepairReply:
    kb = KBFiles.from_config(job.config)
    before = {rel: kb.resolve(rel).read_bytes() for rel in kb.files()}
    req = RepairRequest(**{**dict(job), "suite": job.suite.suite()})
    try:
        outcome = run_repair(req, settings)
        changed = {}
        for rel in outcome.files_changed:
            data = kb.resolve(rel).read_bytes()
            if len(data) > MAX_FILE_BYTES:
                raise ValueError(f"{rel}: the repaired file is over {MAX_FILE_BYTES} bytes")
            changed[rel] = data.decode("utf-8")
    finally:  # put back through the same rule: a link is never followed, a file is replaced, not written into
        for rel, data in before.items():
            if kb.resolve(rel).read_bytes() != data:
                write_bytes_atomic(kb.resolve(rel), data)
        for rel in set(kb.files()) - set(before):
            kb.resolve(rel).unlink()
    return RepairReply(outcome=outcome, changed=changed)


def main(argv: Sequence[str]) -> int:
    """The child: the repair of the request in `argv[0]`, its outcome and changed texts written to `argv[1]`."""
    return serve_apart(argv, RepairJob, _work, os.environ)
