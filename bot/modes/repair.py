"""The repair pull request (input `repair: true`): a step of mode `check`, after the check found regressions.

Which repair: an LLM's KB edits when an LLM is configured (the inputs' endpoint or key, or the base's `llm:`)
and at least one regressed case is fixed by them, each edit proven on the whole suite by the repair loop; else the
verified partial revert of the pull request's KB changes that broke the cases (bot.attribution.causal, found by the
check); else none. The repair loop works in the checkout (with its journal) and the checkout is put back exactly
as it was found: the repair's files travel to GitHub as texts, committed on `sqlcanary/repair/pr-<n>` on top of the
event's `pull_request.head.sha` (bot.github.repair_pr). Never for forks or Dependabot: their checks never get here.
When the pull request no longer regresses, or no repair holds, an open repair pull request is closed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.attribution.revert import RevertCandidate
from bot.base.errors import SqlcanaryError
from bot.base.results import write_json_atomic
from bot.base.settings import Settings
from bot.base.textfilters import md_escape
from bot.check.pipeline import CheckResult
from bot.config.model import Config
from bot.github.context import ActionContext
from bot.github.gitpush import PushFallback
from bot.github.repair_change import RepairChange, RepairTarget
from bot.github.repair_pr import RepairResult, close_repair, publish_repair
from bot.kb.files import KBFiles
from bot.repair.outcome import RepairOutcome
from bot.report.repair_pr import render_repair_pr
from bot.report.repair_view import Rates, RepairPRView, build_repair_pr_view

NO_LONGER = "the pull request no longer regresses"


@dataclass(frozen=True)
class RepairStep:
    """What the repair did, for the sticky comment (`note`) and the outputs."""

    result: RepairResult | None
    note: str = ""
    repaired: tuple[str, ...] = ()
    still_failing: tuple[str, ...] = ()

    @property
    def outputs(self) -> dict[str, str]:
        r = self.result
        exists = r is not None and r.pr_number is not None and r.action not in ("closed", "skipped")
        return {
            "repair-pr-number": str(r.pr_number) if exists and r else "",
            "repair-pr-url": (r.html_url or "") if exists and r else "",
            "repaired": ",".join(self.repaired),
            "still-failing": ",".join(self.still_failing),
        }


def no_repair_note(*, llm_asked: bool, revert: str) -> str:
    """Why there is no repair, as the sticky comment says it. `llm_asked`: an LLM was configured and asked;
    `revert`: "whole" (the only revert that restores the cases undoes every KB change of the pull request),
    "none" (no KB change was found to cause them), "failed" (the partial revert does not hold) or "" (no
    attribution ran)."""
    llm = "no LLM edit fixed a case" if llm_asked else "no LLM configured"
    why = {
        "whole": "the only revert that restores these cases undoes every KB change of the pull request",
        "none": "no KB change of the pull request was found to cause them",
        "failed": "no partial revert of the pull request's KB changes holds",
    }.get(revert, "no revert was tried (the check ran no attribution)")
    return f"no repair: {llm}, and {why}"


def _revert_kind(check: CheckResult) -> str:
    found = check.found
    if found is None:
        return ""
    causal = set(found.attribution.causal)
    if not causal:
        return "none"
    return "whole" if causal == set(found.changes.ids) else "failed"


def _llm_configured(ctx: ActionContext, config: Config) -> bool:
    return bool(ctx.inputs.openai_base_url or ctx.inputs.openai_api_key or config.llm.base_url)


def _kb_root(config: Config, repo: Path) -> str:
    rel = Path(config.base_dir).resolve().relative_to(repo.resolve()).as_posix()
    return "" if rel == "." else rel + "/"


def _llm_repair(
    check: CheckResult,
    config: Config,
    settings: Settings,
    *,
    max_calls: int,
    max_minutes: float,
    cwd: Path,
    say: Callable[[str], None],
) -> tuple[RepairOutcome, dict[str, str]]:
    """The repair loop on the checkout's KB, in a child that holds no token (bot.check.repair_child); returns
    its outcome and the changed files' texts (relative to the config folder). The KB is as it was after."""
    from bot.check.repair_child import repair_apart
    from bot.repair.setup import Limits
    from bot.run.server import provision_server

    suite = check.head_suite if config.suite else None  # as the check read it: the suite is parsed once
    if suite is None:
        raise SqlcanaryError("the repair needs the config's `suite:`")
    say(f"repair: asking the LLM for KB edits (at most {max_calls} calls)")
    reply = repair_apart(
        check.head,
        config,
        suite,
        limits=Limits(
            max_llm_calls=max_calls, max_seconds=max_minutes * 60, calls_flag="input repair-max-llm-calls"
        ),
        base_pass_rate=check.comparison.overall.base_rate,
        comparison=check.comparison,
        only=tuple(c.id for c in check.comparison.judged_as("regressed")),
        server=provision_server(None, config, settings, None),
        settings=settings,
        cwd=cwd,
    )
    return reply.outcome, reply.changed


def _chosen(
    outcome: RepairOutcome | None, changed: dict[str, str], revert: RevertCandidate | None, *, prefix: str
) -> tuple[dict[str, str], RepairOutcome | None, RevertCandidate | None]:
    """The files of the repair to publish (repository paths), preferring an LLM edit that fixed a case."""
    if outcome is not None and changed and any(c.repaired for c in outcome.cases):
        return {prefix + rel: text for rel, text in changed.items()}, outcome, None
    if revert is not None and revert.holds:
        return {p: t for p, t in revert.files.items() if t is not None}, None, revert
    return {}, None, None


def repair_step(
    ctx: ActionContext,
    settings: Settings,
    check: CheckResult,
    *,
    make_github: Callable[[str], Any],
    workdir: Path,
    repo: Path,
    say: Callable[[str], None],
    out_dir: Path | None = None,
) -> RepairStep:
    """Open, update or close the repair pull request of this pull request; never raises for GitHub's refusals
    (they become the note the sticky comment shows)."""
    inputs, event = ctx.inputs, ctx.event
    token = inputs.repair_token or inputs.github_token
    if not (ctx.trusted and event.pr_number and event.head_ref and event.head_sha and token):
        return RepairStep(None, "no repair pull request: it needs a same-repository pull request and a token")
    config = check.head_config
    if config is None:
        return RepairStep(None, "no repair pull request: the check has no config")
    github = make_github(token)
    target = RepairTarget(ctx.runner.repository, event.pr_number, event.head_ref, event.head_sha)
    regressed = tuple(c.id for c in check.comparison.judged_as("regressed"))
    try:
        if check.comparison.verdict != "regressions" or not regressed:
            return RepairStep(close_repair(github, target, NO_LONGER))
        outcome: RepairOutcome | None = None
        changed: dict[str, str] = {}
        if _llm_configured(ctx, config) and inputs.repair_max_llm_calls:
            outcome, changed = _llm_repair(
                check,
                config,
                settings,
                max_calls=inputs.repair_max_llm_calls,
                max_minutes=inputs.repair_max_minutes,
                cwd=workdir,
                say=say,
            )
            if out_dir is not None:  # the loop's record, as `sqlcanary repair` writes it
                write_json_atomic(
                    out_dir / "repair" / "outcome.json", outcome.model_dump_json(indent=2) + "\n"
                )
        revert = check.found.revert if check.found else None
        files, used, reverted = _chosen(outcome, changed, revert, prefix=_kb_root(config, repo))
        if not files:
            why = no_repair_note(llm_asked=outcome is not None, revert=_revert_kind(check))
            return RepairStep(close_repair(github, target, why), why, still_failing=regressed)
        fixed = (
            tuple(c.id for c in used.cases if c.repaired) if used else (reverted.restored if reverted else ())
        )
        view = _view(ctx, check, used, reverted, pr_number=event.pr_number)
        change = RepairChange(
            target,
            files=files,
            allowed=_rule(config, repo),
            commit_message=_message(event.pr_number, fixed, files),
            title=repair_title(event.pr_number, fixed, regressed),
            body=render_repair_pr(view, secrets=settings.secrets),
        )
        fallback = PushFallback(workdir, token, environ=settings.environ)
        result = publish_repair(github, change, fallback=fallback)
    except SqlcanaryError as exc:
        # The error may quote a file name of the pull request: escaped, as every untrusted text in the comment.
        return RepairStep(
            None, f"no repair pull request: {md_escape(str(exc), 300)}", still_failing=regressed
        )
    still = tuple(i for i in regressed if i not in fixed)
    return RepairStep(result, _note(result, fixed, regressed), repaired=fixed, still_failing=still)


def _view(
    ctx: ActionContext,
    check: CheckResult,
    used: RepairOutcome | None,
    reverted: RevertCandidate | None,
    *,
    pr_number: int,
) -> RepairPRView:
    """The repair pull request's body: base → head → repaired pass rates (an LLM repair's from its own
    outcome.json, so the body and the record agree), what was kept, and where it came from."""
    runner = ctx.runner
    rates = (check.comparison.overall.base_rate, check.comparison.overall.head_rate)
    if used is not None:
        rates = (used.base_pass_rate if used.base_pass_rate is not None else rates[0], used.head_pass_rate)
    repaired_rate = used.repaired_pass_rate if used else (reverted.reverted_pass_rate if reverted else None)
    return build_repair_pr_view(
        pr_number=pr_number,
        rates=Rates(rates[0], rates[1], repaired_rate),
        token="repair_token" if ctx.inputs.repair_token else "github_token",
        outcome=used,
        revert=reverted,
        source_url=f"{runner.server_url}/{runner.repository}/pull/{pr_number}",
        workflow=runner.workflow,
    )


def _rule(config: Config, repo: Path) -> Callable[[str], str | None]:
    """Repository paths the repair may write: the config's `kb.paths`, under the repair loop's rules."""
    kb = KBFiles.from_config(config)
    prefix = _kb_root(config, repo)

    def allowed(path: str) -> str | None:
        if not path.startswith(prefix):
            return f"{path}: outside the KB folder {prefix or '.'}"
        return kb.allowed(path[len(prefix) :])

    return allowed


SHOWN_FIXES = 20  # cases a commit message lists (the rest are counted)


def _regressed(n: int) -> str:
    return f"{n} regressed case" + ("" if n == 1 else "s")


def repair_title(pr: int, fixed: tuple[str, ...], regressed: tuple[str, ...]) -> str:
    """ "sqlcanary: repair 3 of 15 regressed cases from #12": what the repair fixes, of what regressed."""
    if len(fixed) == len(regressed):
        return f"sqlcanary: repair {_regressed(len(fixed))} from #{pr}"
    return f"sqlcanary: repair {len(fixed)} of {_regressed(len(regressed))} from #{pr}"


def _message(pr: int, fixed: tuple[str, ...], files: dict[str, str]) -> str:
    """The repair commit's message: how many cases it fixes, the first SHOWN_FIXES by id, the KB files."""
    lines = [f"sqlcanary: repair {_regressed(len(fixed))} from #{pr}", ""]
    lines += [f"- fixes {case}" for case in fixed[:SHOWN_FIXES]]
    if len(fixed) > SHOWN_FIXES:
        lines.append(f"- and {len(fixed) - SHOWN_FIXES} more")
    lines += ["", "KB files: " + ", ".join(sorted(files))]
    return "\n".join(lines) + "\n"


def _note(result: RepairResult, fixed: tuple[str, ...], regressed: tuple[str, ...]) -> str:
    pr = f"#{result.pr_number}" if result.pr_number else "the repair pull request"
    if result.action == "handed_off":
        return f"a person edited the repair branch `{result.branch}` ({pr}): sqlcanary leaves it alone"
    if result.action in ("opened", "updated", "unchanged"):
        return f"repair pull request {pr} ({result.action}) fixes {len(fixed)} of {len(regressed)} regressed case(s)"
    return f"repair pull request: {result.action} ({result.reason})" if result.reason else ""
