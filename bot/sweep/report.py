"""The sweep report's data model: one row per setting (in the grid's order), every number the table, the charts
and sweep-report.json show; built from the per-setting runs (bot.sweep.collect) and nothing else."""

from __future__ import annotations

from pydantic import Field

from bot.base.results import FrozenModel, RunResult
from bot.compare.metrics import MetricDelta, compare_metrics
from bot.sweep.collect import SettingRun
from bot.sweep.metrics import latency, paired, repeated

SWEEP_SCHEMA_VERSION = 1
MAX_IDS = 50  # case ids listed per setting for won / lost (the counts are always whole)


class VersusFirst(FrozenModel):
    """This setting against the first one, case by case."""

    compared: int
    won: int
    lost: int
    won_ids: tuple[str, ...] = ()  # at most MAX_IDS of them
    lost_ids: tuple[str, ...] = ()
    discordant_first_passed: int
    discordant_this_passed: int
    mcnemar_p: float
    # Cost, tokens, latency and query cost against the first setting, case by case: what a check compares, by
    # the same code (bot.compare.metrics). Legs run in jobs of their own, so latency is shown, never gated.
    metrics: tuple[MetricDelta, ...] = ()


class SettingRow(FrozenModel):
    name: str
    index: int | None = None
    model: str | None = None  # the setting's, else the LLM usage's (what the llm agent called)
    temperature: float | None = None
    agent: str = ""
    preset: str = ""
    repeat: int = 1
    files: int = 1  # shard files merged
    complete: bool = True
    total: int
    passed: int
    failed: int
    invalid: int
    errored: int
    pass_rate: float | None
    by_category: dict[str, float | None] = Field(default_factory=dict)
    by_tag: dict[str, float | None] = Field(default_factory=dict)
    pass_at_k: float | None = None  # with repeat > 1: k = repeat
    pass_hat_k: float | None = None
    versus_first: VersusFirst | None = None  # None for the first setting
    agent_calls: int = 0
    llm_calls: int | None = None  # None: the agent calls no LLM (or does not say)
    cached_llm_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None


class SweepReport(FrozenModel):
    sweep_schema_version: int = SWEEP_SCHEMA_VERSION
    suite: str
    suite_hash: str
    first: str  # the setting the others are compared with
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    repeated: bool = False  # some setting repeated its attempts: the pass@k / pass^k columns mean something
    settings: tuple[SettingRow, ...]


def _row(item: SettingRun, first: RunResult | None) -> SettingRow:
    run, s = item.run, item.setting
    summary, llm, reported = run.summary, run.meta.llm, run.summary.usage
    rep = repeated(run)
    p50, p95 = latency(run)
    versus = None
    if first is not None:
        pair = paired(first, run)
        versus = VersusFirst(
            compared=pair.compared,
            won=len(pair.won),
            lost=len(pair.lost),
            won_ids=pair.won[:MAX_IDS],
            lost_ids=pair.lost[:MAX_IDS],
            discordant_first_passed=pair.b,
            discordant_this_passed=pair.c,
            mcnemar_p=pair.p_value,
            metrics=compare_metrics(first, run, latency_gated=False),
        )
    return SettingRow(
        name=s.name,
        index=s.index,
        model=s.model or (llm.model if llm else None),
        temperature=s.temperature,
        agent=s.agent or run.meta.agent,
        preset=run.meta.preset,
        repeat=run.meta.repeats,
        files=len(item.files),
        complete=run.meta.complete,
        total=summary.total,
        passed=summary.passed,
        failed=summary.failed,
        invalid=summary.invalid,
        errored=summary.errored,
        pass_rate=summary.pass_rate,
        by_category={k: v.pass_rate for k, v in summary.by_category.items()},
        by_tag={k: v.pass_rate for k, v in summary.by_tag.items()},
        pass_at_k=rep.pass_at_k if rep else None,
        pass_hat_k=rep.pass_hat_k if rep else None,
        versus_first=versus,
        agent_calls=run.meta.agent_calls,
        llm_calls=llm.calls if llm else None,
        cached_llm_calls=llm.cached_calls if llm else None,
        # The built-in agent's own count, else what the agent reported per answer (`usage`), summed.
        prompt_tokens=llm.prompt_tokens if llm else reported.prompt_tokens if reported else None,
        completion_tokens=llm.completion_tokens if llm else reported.completion_tokens if reported else None,
        tokens=llm.prompt_tokens + llm.completion_tokens if llm else reported.tokens if reported else None,
        cost_usd=llm.cost_usd if llm else reported.cost_usd if reported else None,
        latency_p50_s=p50,
        latency_p95_s=p95,
    )


def build_report(items: list[SettingRun]) -> SweepReport:
    """The report of settings in order; the first is the reference."""
    first = items[0].run
    rows = [_row(items[0], None)] + [_row(item, first) for item in items[1:]]
    categories = sorted({k for item in items for k in item.run.summary.by_category})
    tags = sorted({k for item in items for k in item.run.summary.by_tag})
    return SweepReport(
        suite=first.meta.suite,
        suite_hash=first.meta.suite_hash,
        first=rows[0].name,
        categories=tuple(categories),
        tags=tuple(tags),
        repeated=any(r.repeat > 1 for r in rows),
        settings=tuple(rows),
    )
