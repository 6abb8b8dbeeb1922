"""The pull-request check: plan the two sides (bot.check.sides), evaluate each in its own `sqlcanary run` process
(bot.check.child; the base's run may come from the cache, bot.check.base_run), compare them under the base's
rules, link the regressions to the change, find which KB change caused them when asked (in a child of its own,
bot.check.causes_child), and write the files. `run_check` is what `sqlcanary check` and the
GitHub Action call."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from bot.attribution.causal import CausalFindings, CauseRequest, causal_notes
from bot.base.errors import EXIT_BUG, ConfigError, SqlcanaryError
from bot.base.resultfiles import ResultFiles
from bot.base.results import RunResult
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.check.audit_child import FILE as AUDIT_FILE
from bot.check.audit_child import audit_touched
from bot.check.base_run import evaluate_base
from bot.check.base_run import run_baseline as run_baseline  # the Action's baseline mode imports it from here
from bot.check.causes_child import find_causes_apart
from bot.check.child import evaluate_side
from bot.check.diff import pr_diff
from bot.check.request import CheckRequest
from bot.check.sides import CheckPlan, Side, plan_check
from bot.compare.causes import explain_comparison
from bot.compare.comparison import NO_BASELINE, Comparison, compare_head_only, compare_runs
from bot.compare.diff import FileDiff
from bot.compare.gate import exit_code, resolve_gate
from bot.compare.transitions import is_edited
from bot.config.model import Config
from bot.db.provision import Server
from bot.report.console import cache_line
from bot.run.server import provision_server

DEFAULT_OUT_DIR = "sqlcanary-results"

Say = Callable[[str], None]


@dataclass(frozen=True)
class CheckResult:
    """What a check found: both runs (no base run for a first pull request), their comparison, where the files
    are, and the shas it compared."""

    base: RunResult | None
    head: RunResult
    comparison: Comparison
    out_dir: Path
    files: tuple[str, ...]  # written to out_dir
    base_sha: str
    head_sha: str | None
    head_config: Config | None = (
        None  # the config the head was evaluated with (the base's, but for its agent)
    )
    found: CausalFindings | None = (
        None  # the KB changes that broke each regressed case, and the partial revert
    )
    head_suite: Suite | None = None  # the head side's suite, as this process read it (for the repair)

    @property
    def bugs(self) -> list[str]:
        """Cases that hit an internal error (a bug in sqlcanary) on either side."""
        runs = [r for r in (self.base, self.head) if r is not None]
        return [c.id for r in runs for c in r.cases if c.error_class == "internal_error"]

    @property
    def exit_code(self) -> int:
        code = exit_code(self.comparison.verdict)
        return EXIT_BUG if self.bugs and code == 0 else code


def write_reports(
    comparison: Comparison,
    base: RunResult | None,
    head: RunResult,
    out_dir: Path,
    *,
    secrets: tuple[str, ...],
    comment: bool = True,
) -> tuple[Comparison, tuple[str, ...]]:
    """comparison.json, the sticky comment and the HTML report (causes and latency both) beside the runs
    (base.json, head.json) already in `out_dir`, each masked of `secrets` as it is written (bot.base.resultfiles);
    the comparison as written, and the names of the files. The reports are rendered from the comparison and runs
    masked of `secrets` (bot.report.render masks its subject; the runs were masked as they were written:
    bot.check.child)."""
    from bot.report.render import render

    files = ResultFiles(out_dir, secrets)
    names = (*(["base.json"] if base else []), "head.json", "comparison.json")
    reports: dict[str, str] = {}
    if comment:
        reports = {
            "comment.md": render("md", comparison, head=head, base=base, secrets=secrets),
            "report.html": render("html", comparison, head=head, base=base, secrets=secrets),
        }
    comparison = files.model("comparison.json", comparison)
    for name, text in reports.items():
        files.text(name, text)
    return comparison, (*names, *reports)


@dataclass(frozen=True)
class _Runs:
    """Both sides evaluated: the base's run (None without a baseline), the head's, and {case id: status} of the
    head's answers to the cases it edited, judged by the base's version of each case."""

    base: RunResult | None
    head: RunResult
    edited_by_base: dict[str, str]
    timed_together: bool = False  # both runs asked their agent in this check: their latencies may be compared


def run_check(req: CheckRequest, settings: Settings, *, say: Say = lambda _: None) -> CheckResult:
    """Evaluate base and head, compare them under the base commit's gate, write the files; raise a
    SqlcanaryError for what the user must fix (exit 2)."""
    req = replace(req, run=req.run.anchored())
    out_dir = (req.run.folder / (req.out_dir or DEFAULT_OUT_DIR)).resolve()
    with ExitStack() as stack:
        plan = plan_check(req, settings, stack, out_dir=out_dir, say=say)
        server = provision_server(req.run.dsn, plan.head.config, plan.settings, req.run.postgres)
        runs = _evaluate(plan, server, use_cache=not req.no_base_cache, say=say)
        # While the head tree exists: the diff the regressions are linked to and the gold SQL the reports show.
        diff = _diff(plan) if runs.base is not None else ()
        # The head's suite, read once: the reports' gold SQL, attribution's request and the Action's repair
        head_suite = plan.head.read_suite()
        comparison = _compare(req, plan, runs, diff)
        audit, notes = audit_touched(
            plan.head, server, _touched(comparison), out_dir / AUDIT_FILE, plan.settings
        )
        comparison = comparison.model_copy(update={"warnings": (*comparison.warnings, *notes)})
        found = None
        if runs.base is not None and req.attribute_calls and comparison.judged_as("regressed"):
            found = _attribute(plan, comparison, diff, server, runs.head, req.attribute_calls, say)
    if found is not None:
        comparison = comparison.model_copy(update={"warnings": (*comparison.warnings, *causal_notes(found))})
    comparison, files = write_reports(
        comparison, runs.base, runs.head, out_dir, secrets=plan.settings.secrets, comment=req.write_comment
    )
    files = (*files, AUDIT_FILE) if audit is not None else files
    return CheckResult(
        head_config=plan.head.config,
        found=found,
        head_suite=head_suite,
        base=runs.base,
        head=runs.head,
        comparison=comparison,
        out_dir=out_dir,
        files=files,
        base_sha=plan.base_sha,
        head_sha=plan.head.tree.sha,
    )


def _touched(comparison: Comparison) -> list[str]:
    """The cases whose gold the change may have written: new in the head, or edited."""
    return [c.id for c in comparison.cases if c.transition in ("new", "renamed") or c.edited]


def _evaluate(plan: CheckPlan, server: Server, *, use_cache: bool, say: Say) -> _Runs:
    """The base's run (from the cache when it may be), the head's, then the head's answers to the cases it edited
    judged by the base's version of each."""
    base, base_cached = _evaluate_base(plan, server, use_cache=use_cache, say=say)
    head = plan.head
    say(f"head {head.describe()}: evaluating" + ("" if head.tree.working else " in a temporary worktree"))
    head_run = evaluate_side(head, server, plan.out_dir / "head.json", plan.settings)
    if head_run.meta.cache_hits:
        say(f"head {head.describe()}: {cache_line(head_run.meta)}")
    if head_run.meta.sandbox:
        say(f"the head's agent ran with sandbox: {head_run.meta.sandbox}")
    if base is None or plan.base is None:
        return _Runs(base, head_run, {})
    together = not base_cached and not head_run.meta.reused_from
    return _Runs(base, head_run, _judged_by_base(plan.base, head_run, base, server, plan, say), together)


def _evaluate_base(
    plan: CheckPlan, server: Server, *, use_cache: bool, say: Say
) -> tuple[RunResult | None, bool]:
    """The base's run (None without a baseline) and whether it came from the run cache."""
    out = plan.out_dir / "base.json"
    if plan.base is None:
        say(f"no baseline: {NO_BASELINE}; the head is judged alone")
        out.unlink(missing_ok=True)
        return None, False
    try:
        return evaluate_base(plan.base, server, out, plan.settings, use_cache=use_cache, say=say)
    except SqlcanaryError as exc:
        raise ConfigError(f"base {plan.base_sha[:12]}: {exc}") from exc


def _diff(plan: CheckPlan) -> tuple[FileDiff, ...]:
    head = plan.head.tree
    head_sha = None if head.working else head.sha
    return pr_diff(plan.repo, plan.base_sha, head_sha, environ=plan.settings.environ)


def _compare(req: CheckRequest, plan: CheckPlan, runs: _Runs, diff: tuple[FileDiff, ...]) -> Comparison:
    """The head's run against the base's under the base's gate (the head's config is the base's:
    bot.config.trusted, so a change cannot loosen the rules it is judged by; without a base config, the head's
    own gate alone decides), its regressions linked to `diff`, with each case's gold SQL and the head's notes.
    These come from the trees, not from the masked runs: write_reports masks the comparison as it writes it."""
    gold = plan.head.gold()
    gate = resolve_gate(plan.head.config.gate, req.gate)
    if runs.base is not None:
        comparison = compare_runs(
            runs.base,
            runs.head,
            gate=gate,
            force=req.force,
            edited_against_base=runs.edited_by_base,
            latency_gated=runs.timed_together,
        )
        comparison = explain_comparison(comparison, diff, roots=plan.head.roots, gold=gold)
    else:
        comparison = compare_head_only(runs.head, gate=gate, reason=NO_BASELINE)
        cases = tuple(c.model_copy(update={"gold_sql": gold.get(c.id, c.gold_sql)}) for c in comparison.cases)
        comparison = comparison.model_copy(update={"cases": cases})
    notes = plan.head.tree.notes
    if not notes:
        return comparison
    return comparison.model_copy(update={"warnings": (*notes, *comparison.warnings)})


def _attribute(
    plan: CheckPlan,
    comparison: Comparison,
    diff: tuple[FileDiff, ...],
    server: Server,
    head_run: RunResult,
    max_agent_calls: int,
    say: Say,
) -> CausalFindings:
    """Delta debugging over the pull request's KB line changes for each regressed case (on a copy of the head's
    tree, the agent sandboxed as in any run), and the partial revert verified on the whole suite: in a child
    process of its own, which holds none of this process's secrets (bot.check.causes_child)."""
    head = plan.head
    regressed = [c.id for c in comparison.judged_as("regressed")]
    say(
        f"finding which KB change broke {len(regressed)} regressed case(s) (at most {max_agent_calls} agent calls)"
    )
    request = CauseRequest(
        diff,
        config=head.config,
        base_root=plan.base_root,
        head_root=head.tree.root,
        suite=head.suite,
        agent=head.agent,
        head={c.id: c.status for c in head_run.cases},
        regressed=regressed,
        base_pass_rate=comparison.overall.base_rate,
        max_agent_calls=max_agent_calls,
    )
    return find_causes_apart(request, head.tree, server, plan.settings)


def _edited_ids(base_run: RunResult, head_run: RunResult) -> list[str]:
    """Cases the head edited (bot.compare.transitions.is_edited) that passed on the base."""
    base = {c.id: c for c in base_run.cases}
    return [c.id for c in head_run.cases if is_edited(base.get(c.id), c) and base[c.id].status == "passed"]


def _judged_by_base(
    base: Side, head_run: RunResult, base_run: RunResult, server: Server, plan: CheckPlan, say: Say
) -> dict[str, str]:
    """{case id: status} of the head's answers to the cases it edited, judged by the base's version of each case
    (in the base's tree, by the base's gold): a pull request cannot rewrite a gold to match its own break."""
    ids = _edited_ids(base_run, head_run)
    if not ids:
        return {}
    say(f"{len(ids)} edited case(s): judging the head's answers by the base's version too")
    head_json = plan.out_dir / "head.json"
    cross = replace(
        base.request, agent=f"run:{head_json}", ids=tuple(ids), tags=(), repeat=1, persistent=False
    )
    out = plan.out_dir / "edited-by-base.json"
    run = evaluate_side(Side(base.tree, cross, base.repo), server, out, plan.settings)
    return {c.id: c.status for c in run.cases}
