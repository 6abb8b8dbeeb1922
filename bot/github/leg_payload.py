"""`github-payload.json`: what a check leg leaves for the job that posts its results (`mode: post`).

A leg writes it when it does not post itself: a fork's or Dependabot's pull request (read-only token), or one shard
of a sharded check (`shard: i/N`). Beside it, in the leg's `sqlcanary-results/`: `head.json`, `base.json` (absent
without a baseline) and `comparison.json`, named in `files`. The poster treats all of it as untrusted data
(bot.github.artifact): it re-renders the comment and the check run from the runs with its own templates, and posts
only to the pull request and commit the trusted event names; `pr_number` and `head_sha` here must agree with them.
`check_run` is what the leg would have sent, for a reader of the artifact: the poster never posts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from bot.base.results import FrozenModel, write_json_atomic
from bot.check.pipeline import CheckResult
from bot.github.context import ActionContext
from bot.github.event import Sha
from bot.github.payload import CheckPayload

PAYLOAD_FILE = "github-payload.json"
# 1: the unversioned payload written before issue 16 (pr_number, head_repository, head_ref, check_run).
PAYLOAD_SCHEMA_VERSION = 2
PAYLOAD_KIND: Literal["sqlcanary-check"] = "sqlcanary-check"

FileName = Annotated[str, Field(min_length=1, max_length=255)]


class LegFiles(FrozenModel):
    """The leg's files, relative to its folder (the poster refuses any that resolves outside it)."""

    head: FileName
    base: FileName | None = None  # no baseline: the base commit had no sqlcanary suite or config
    comparison: FileName


class LegPayload(FrozenModel):
    schema_version: int
    kind: Literal["sqlcanary-check"]
    pr_number: int = Field(ge=1)
    head_sha: Sha
    base_sha: Sha | None = None
    head_repository: str | None = Field(default=None, max_length=200)
    head_ref: str | None = Field(default=None, max_length=300)
    key: str = Field(
        default="", max_length=500
    )  # the leg's comment key (informative: the poster uses its own)
    shard: str | None = Field(default=None, pattern=r"^[0-9]{1,4}/[0-9]{1,4}$")
    files: LegFiles
    # Who posts it: a `workflow_run` job (a fork's or Dependabot's leg: its token is read-only), or the final job of
    # the same workflow (a shard of a trusted check), which a `workflow_run` poster then leaves alone.
    posted_by: Literal["workflow_run", "final_job"] = "workflow_run"
    check_run: dict[str, Any] = Field(default_factory=dict)


def leg_payload(ctx: ActionContext, result: CheckResult, check: CheckPayload) -> LegPayload:
    event = ctx.event
    return LegPayload(
        schema_version=PAYLOAD_SCHEMA_VERSION,
        kind=PAYLOAD_KIND,
        pr_number=event.pr_number or 0,
        head_sha=event.head_sha or "",
        base_sha=event.base_sha,
        head_repository=event.head_repository,
        head_ref=event.head_ref,
        key=ctx.key,
        shard=ctx.inputs.shard,
        files=LegFiles(
            head="head.json", base="base.json" if result.base else None, comparison="comparison.json"
        ),
        posted_by="workflow_run" if ctx.event.untrusted else "final_job",
        check_run=check.to_json(),
    )


def write_leg_payload(out_dir: Path, payload: LegPayload) -> Path:
    path = out_dir / PAYLOAD_FILE
    data = payload.model_dump(mode="json")
    write_json_atomic(path, json.dumps(data, indent=2) + "\n")
    return path
