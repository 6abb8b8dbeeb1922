"""The repair as a typed request, as `run_check` is for the check: what to repair and within which limits
(`RepairRequest`), and `run_repair(req, settings)`, which provisions PostgreSQL, builds the LLM client (none when
the suite is only evaluated) and runs the loop. `sqlcanary repair` and the Action's repair pull request call it."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.base.results import RunResult
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.compare.comparison import Comparison
from bot.config.model import Config
from bot.db.provision import Mode
from bot.llm.protocol import JsonLLM
from bot.repair.loop import repair
from bot.repair.outcome import RepairOutcome
from bot.repair.setup import Limits, make_client
from bot.run.server import provision_server


@dataclass(frozen=True)
class RepairRequest:
    """Repair the failing cases of `run` (a run of `suite` under `config`)."""

    run: RunResult
    config: Config
    suite: Suite
    limits: Limits = Limits()
    dry_run: bool = False  # plans are shown and verified, never kept
    evaluate_only: bool = False  # no LLM: the suite is evaluated and reported
    base_pass_rate: float | None = None  # the base commit's, for the report's base → head → repaired
    comparison: Comparison | None = None  # a check's: the cause links and diffs for the prompts
    only: tuple[str, ...] | None = None  # repair these failing cases only (a pull request's regressions)
    dsn: str | None = field(default=None, repr=False)  # --dsn; else DATABASE_URL, the config's, embedded
    postgres: Mode | None = None


def run_repair(req: RepairRequest, settings: Settings, *, client: JsonLLM | None = None) -> RepairOutcome:
    """Provision PostgreSQL, build the client from the config's `llm:` (capped at `limits.max_llm_calls`)
    unless one is given or the suite is only evaluated, and run the loop."""
    server = provision_server(req.dsn, req.config, settings, req.postgres)
    if client is None and not req.evaluate_only:
        client = make_client(req.config, max_calls=req.limits.max_llm_calls, settings=settings)
    return repair(
        req.run,
        config=req.config,
        suite=req.suite,
        server=server,
        client=None if req.evaluate_only else client,
        limits=req.limits,
        only=req.only,
        dry_run=req.dry_run,
        evaluate_only=req.evaluate_only,
        base_pass_rate=req.base_pass_rate,
        settings=settings,
        comparison=req.comparison,
    )
