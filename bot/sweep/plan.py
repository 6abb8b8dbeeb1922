"""`sweep plan`: the matrix for `fromJSON()`, one entry per setting x shard, checked against GitHub's limits.

    {"include": [{"setting": "small", "index": 1, "shard": "1/2", "leg": "small-1-of-2",
                  "model": "qwen2.5-coder-1.5b", "temperature": 0.0}, ...]}

Fields a setting leaves unset are omitted. `index` is the setting's place in the grid (1-based): the report orders
its columns by it, and compares every setting with the first. `leg` names the job without a slash, for its
artifact (`sweep-${{ matrix.leg }}`: unique per job, on GitHub and under act alike).

Limits (GitHub Actions): a matrix makes at most 256 jobs; a job's outputs are at most 1 MB in all. The 25
`workflow_dispatch` inputs are a property of a workflow file, not of a grid (the grid reaches the plan as one
file or one input): `dispatch_inputs_problem` checks a workflow file against it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.base.errors import ConfigError
from bot.base.yamlread import load_yaml_file
from bot.sweep.grid import Setting

MAX_MATRIX_JOBS = 256  # docs.github.com: "A matrix will generate a maximum of 256 jobs per workflow run"
MAX_OUTPUT_BYTES = 1024 * 1024  # ../shared/github/limits.json job_outputs_max_per_job: 1 MB
MAX_DISPATCH_INPUTS = 25  # ../shared/github/limits.json workflow_dispatch_inputs_max
MAX_SHARDS = 256


def matrix_entry(setting: Setting, index: int, shard: int, shards: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "setting": setting.name,
        "index": index,
        "shard": f"{shard}/{shards}",
        "leg": f"{setting.name}-{shard}-of-{shards}",
    }
    for key in ("model", "temperature", "agent", "preset", "repeat"):
        value = getattr(setting, key)
        if value is not None:
            entry[key] = value
    return entry


def plan_matrix(settings: list[Setting], shards: int) -> dict[str, Any]:
    """The matrix; ConfigError (exit 2) naming the limit and the numbers when GitHub would refuse it."""
    if not 1 <= shards <= MAX_SHARDS:
        raise ConfigError(f"--shards: expected 1 to {MAX_SHARDS}, got {shards}")
    jobs = len(settings) * shards
    if jobs > MAX_MATRIX_JOBS:
        raise ConfigError(
            f"the sweep needs {jobs} matrix jobs ({len(settings)} setting(s) x {shards} shard(s)); GitHub "
            f"runs at most {MAX_MATRIX_JOBS} jobs per matrix: fewer settings or shards"
        )
    matrix = {
        "include": [
            matrix_entry(s, i, shard, shards)
            for i, s in enumerate(settings, start=1)
            for shard in range(1, shards + 1)
        ]
    }
    size = len(matrix_json(matrix).encode("utf-8"))
    if size > MAX_OUTPUT_BYTES:
        raise ConfigError(
            f"the matrix is {size} bytes of JSON; a job's outputs are at most {MAX_OUTPUT_BYTES} bytes "
            "(1 MB): shorter agent specs or fewer settings"
        )
    return matrix


def matrix_json(matrix: dict[str, Any]) -> str:
    """One line (GITHUB_OUTPUT takes `name=value` lines)."""
    return json.dumps(matrix, separators=(",", ":"), ensure_ascii=False)


def dispatch_inputs_problem(workflow: str | Path) -> str | None:
    """Why GitHub would refuse this workflow file's `workflow_dispatch` inputs (more than 25), or None."""
    data = load_yaml_file(Path(workflow))
    on = data.get("on", data.get("True")) if isinstance(data, dict) else None  # YAML 1.1 reads `on` as True
    dispatch = on.get("workflow_dispatch") if isinstance(on, dict) else None
    inputs = dispatch.get("inputs") if isinstance(dispatch, dict) else None
    n = len(inputs) if isinstance(inputs, dict) else 0
    if n > MAX_DISPATCH_INPUTS:
        return (
            f"{workflow}: {n} workflow_dispatch inputs; GitHub accepts at most {MAX_DISPATCH_INPUTS}: "
            "put the settings in a grid file or one JSON input"
        )
    return None
