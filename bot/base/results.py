"""Every model written to disk or passed between steps, with SCHEMA_VERSION and read/write helpers."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from bot.base.errors import ResultFileError
from bot.base.frozen import FrozenModel
from bot.base.usage import AnswerUsage, LLMUsage, QueryCost, UsageTotals, total_usage

SCHEMA_VERSION = 1
# Bumped whenever a scorer's decision rules change: runs scored by different versions are not comparable.
EVALUATOR_VERSION = "3"

Status = Literal["passed", "failed", "invalid", "errored"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "invalid", "errored")


@dataclass(frozen=True)
class ResultSet:
    """Rows fetched from PostgreSQL (in process only): at most row_cap of them, `truncated` when there were more."""

    columns: tuple[str, ...]
    type_oids: tuple[int, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


class Verdict(FrozenModel):
    """One scorer's judgement of one case. `match` None means not decidable, which is not "wrong"."""

    scorer: str
    match: bool | None
    kind: str
    flags: tuple[str, ...] = ()
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class Prediction(FrozenModel):
    sql: str | None = None
    error: str | None = None
    error_class: str | None = None
    stderr: str | None = None
    alternative: int | None = None
    # KB places the agent says it used for this answer ("kb/metrics/gmv.yaml:3-12"); the repair loop reads them.
    used: tuple[str, ...] = ()
    duration_s: float | None = None
    usage: AnswerUsage | None = (
        None  # what the agent says this answer cost (bot.base.usage); not written when None
    )
    cached: bool = (
        False  # the answer came from the answer cache: its latency is not this run's; not written when False
    )

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            if data.get("usage") is None:
                data.pop("usage", None)
            if not data.get("cached"):
                data.pop("cached", None)
        return data


class Attempt(FrozenModel):
    """One of K answers to a case (`--repeat K`): enough to tell a flaky agent from a broken one."""

    status: Status
    sql: str | None = None
    reason: str = ""
    error_class: str | None = None


class CaseResult(FrozenModel):
    """One case's outcome. With `--repeat K`, `attempts` holds every answer; `status` is then the majority
    outcome (ties go to the worse one) and `passes` counts the attempts that passed."""

    id: str
    status: Status
    category: str
    tags: tuple[str, ...] = ()
    db: str = ""
    question: str = ""
    prediction: Prediction = Prediction()
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    deciding_scorer: str | None = None
    reason: str = ""
    error_class: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    source: str | None = None
    attempts: tuple[Attempt, ...] = ()
    # Fingerprint of what produced the answer: agent config + the KB files it reads + the case (for caching).
    answer_key: str | None = None
    # What the case asks (case_content_hash): a case whose id changed but whose hash did not is a rename.
    # None in runs written before it existed: those get no rename detection.
    case_hash: str | None = None
    # What else decides the verdict (setup, teardown, checks, compare options, efficiency, instructions, the
    # suite's limits): a case whose judge_hash changed is edited too, so a check also judges the head's answer by
    # the base's version (bot.compare.transitions.is_edited). None in runs written before it existed.
    judge_hash: str | None = None
    # The case's gold SQL, recorded for a case that did not pass so that reports of the run alone show it beside
    # the prediction. Not written when empty (passed cases, runs from before it existed).
    gold_sql: tuple[str, ...] = ()
    # The planner's cost of the prediction and of the gold (a query case whose prediction ran; bot.base.usage).
    # Not written when None.
    query_cost: QueryCost | None = None

    @model_serializer(mode="wrap")
    def _without_empty_gold(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            if not data.get("gold_sql"):
                data.pop("gold_sql", None)
            if data.get("query_cost") is None:
                data.pop("query_cost", None)
        return data

    @property
    def passes(self) -> int:
        return (
            sum(a.status == "passed" for a in self.attempts)
            if self.attempts
            else int(self.status == "passed")
        )

    @property
    def repeats(self) -> int:
        return len(self.attempts) or 1


class Counts(FrozenModel):
    total: int = 0
    passed: int = 0
    failed: int = 0
    invalid: int = 0
    errored: int = 0

    @property
    def pass_rate(self) -> float | None:
        """Passed over decidable cases (invalid ones are excluded); None when nothing was decidable."""
        decidable = self.total - self.invalid
        return None if decidable <= 0 else self.passed / decidable


class Summary(Counts):
    by_tag: dict[str, Counts] = Field(default_factory=dict)
    by_category: dict[str, Counts] = Field(default_factory=dict)
    # The answers' reported usage, summed (bot.base.usage); not written when no answer had any.
    usage: UsageTotals | None = None

    @model_serializer(mode="wrap")
    def _without_empty_usage(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("usage") is None:
            data.pop("usage", None)
        return data


class RunSetting(FrozenModel):
    """The sweep setting a run evaluated (`mode: sweep`, bot.sweep): its name, its place in the grid (1-based)
    and what it set; written into the run so that a sweep's report groups runs by it, not by file names."""

    name: str
    index: int | None = None
    model: str | None = None
    temperature: float | None = None
    agent: str | None = None
    preset: str | None = None
    repeat: int | None = None


class RunMeta(FrozenModel):
    suite: str
    suite_hash: str
    suite_path: str = ""
    fixtures: dict[str, str] = Field(default_factory=dict)
    server_version: str = ""
    sqlcanary_version: str = ""
    evaluator_version: str = EVALUATOR_VERSION
    preset: str = "sqlcanary"
    agent: str = ""
    git_sha: str | None = None
    started_at: str = ""
    duration_s: float = 0.0
    jobs: int = 1
    filters: dict[str, Any] = Field(default_factory=dict)
    complete: bool = True
    repeats: int = 1
    shard: str | None = None  # "I/N" when this run holds one shard of the suite
    agent_fingerprint: str = ""
    kb_fingerprint: str = ""
    agent_calls: int = 0  # answers the agent was asked for in this run
    cache_hits: int = 0  # answers taken from the answer cache instead
    # Why those answers were trusted: what the agent fingerprint keying the cache covers ("the whole head tree at
    # <sha>", "agent.inputs: 3 globs"). None (not written): no answer cache, or a run from before the field existed.
    cache_basis: str | None = None
    # A check's head run reused whole (bot.run.reuse): when the run it reuses started. None: judged in this run.
    reused_from: str | None = None
    llm: LLMUsage | None = None  # the agent's LLM usage, for an agent that calls one (`--agent llm`)
    llm_judge: LLMUsage | None = None  # the `--llm-judge` diagnostic's
    # The agent's isolation: "uid 61234" (run as that unprivileged user, bot.agents.sandbox) or "off: <why>".
    # None (not written): an agent that runs no process of the PR's, or a run from before the field existed.
    sandbox: str | None = None
    perturb: int | None = None  # the most perturbed copies a case of the run was checked on (`--perturb K`)
    setting: RunSetting | None = None  # a sweep leg's setting (bot.sweep); not written for other runs

    @model_serializer(mode="wrap")
    def _without_empty_llm(self, handler: SerializerFunctionWrapHandler) -> Any:
        """No `llm` / `llm_judge` key for a run without those calls: written exactly as before the fields existed."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("llm", "llm_judge", "sandbox", "perturb", "setting", "cache_basis", "reused_from"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data


class RunResult(FrozenModel):
    schema_version: int = SCHEMA_VERSION
    meta: RunMeta
    summary: Summary
    cases: tuple[CaseResult, ...] = ()


def count(cases: list[CaseResult] | tuple[CaseResult, ...]) -> Counts:
    by_status = {s: 0 for s in STATUSES}
    for case in cases:
        by_status[case.status] += 1
    return Counts(total=len(cases), **by_status)


def summarize(cases: list[CaseResult] | tuple[CaseResult, ...]) -> Summary:
    tags: dict[str, list[CaseResult]] = {}
    categories: dict[str, list[CaseResult]] = {}
    for case in cases:
        for tag in case.tags:
            tags.setdefault(tag, []).append(case)
        categories.setdefault(case.category, []).append(case)
    return Summary(
        **count(cases).model_dump(),
        by_tag={k: count(v) for k, v in sorted(tags.items())},
        by_category={k: count(v) for k, v in sorted(categories.items())},
        usage=total_usage(c.prediction.usage for c in cases),
    )


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def write_json_atomic(path: str | Path, payload: str) -> None:
    """Write a file so that a reader never sees half of it (temp file in the same folder, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it 0600; results are artifacts others read
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(path: str | Path, run: RunResult) -> None:
    write_json_atomic(path, run.model_dump_json(indent=2) + "\n")


MAX_RUN_BYTES = 1 << 30  # a run of 100,000 cases with their samples is far below


def read_run(path: str | Path, *, limit: int = MAX_RUN_BYTES) -> RunResult:
    """A run file, validated: a ResultFileError naming it when it is missing, not JSON, of another schema
    version, not a run, or larger than `limit` bytes (a child's run is untrusted data: it is never read whole
    into memory past the bound)."""
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise ResultFileError(f"larger than {limit:,} bytes: not read", path=str(path))
        raw = json.loads(data.decode("utf-8"))
    except FileNotFoundError as exc:
        raise ResultFileError("no such file", path=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"not JSON: {exc.msg}", path=str(path), line=exc.lineno) from exc
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"not UTF-8 text: {exc.reason}", path=str(path)) from exc
    if not isinstance(raw, dict) or raw.get("schema_version") != SCHEMA_VERSION:
        got = raw.get("schema_version") if isinstance(raw, dict) else None
        raise ResultFileError(
            f"schema_version {got!r} is not {SCHEMA_VERSION}: written by another sqlcanary version",
            path=str(path),
        )
    try:
        return RunResult.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ResultFileError(f"{where}: {first['msg']}", path=str(path)) from exc
