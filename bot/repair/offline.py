"""`sqlcanary repair` without an LLM: the verified partial revert, applied.

With no model configured (no API key, no `llm.base_url`) and a base run (`--from-check DIR`, or `--base BASE.json`
from a commit of this repository), the repair does what the Action's repair pull request falls back to: it finds
which KB changes since the base commit broke the regressed cases (bot.attribution.causal, as `check
--attribute-calls` does), verifies the revert of those changes alone on the whole suite, and, when it holds (every
regressed case the KB broke passes again, no passing case fails, and it is not the whole change), writes it to the
KB files through the repair's transaction (bot.repair.transaction). Nothing else is written: only KB files. It
returns a RepairOutcome like the LLM's loop, with `revert` saying what was done and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.attribution.causal import CauseRequest, causal_notes, find_causes
from bot.attribution.hunks import kb_relative
from bot.attribution.revert import RevertCandidate, pass_rate
from bot.base.errors import ConfigError, SqlcanaryError
from bot.base.git import repo_root
from bot.base.results import Counts, RunResult
from bot.base.settings import Settings
from bot.base.worktree import worktree
from bot.cases.model import Suite
from bot.compare.comparison import Comparison, compare_runs
from bot.compare.diff import FileDiff, unified_diff
from bot.compare.gate import resolve_gate
from bot.config.model import Config
from bot.db.provision import Mode
from bot.kb.files import KBFiles
from bot.repair.outcome import CaseRepair, RepairOutcome, RevertRecord
from bot.repair.transaction import Transaction, recover
from bot.run.server import provision_server

Differ = Callable[[Path, str], Sequence[FileDiff]]  # (repository, base sha) -> the diff to the working tree


@dataclass(frozen=True)
class OfflineRequest:
    """Repair the regressions of `run` (the working tree's) against `base` (a run of an earlier commit) by the
    verified partial revert. `differ` gives the diff from the base commit to the working tree (bot.check.diff)."""

    run: RunResult
    base: RunResult
    config: Config
    suite: Suite
    differ: Differ
    run_file: str = ""  # named in errors
    base_file: str = ""
    comparison: Comparison | None = None  # a check's, when it compared these very runs
    dry_run: bool = False  # find and verify the revert, show it, write nothing
    max_agent_calls: int = 100  # asked to find which change broke each case
    dsn: str | None = field(default=None, repr=False)
    postgres: Mode | None = None


def llm_configured(config: Config, settings: Settings) -> bool:
    """An API key in the environment or an endpoint (`llm.base_url`, SQLCANARY_LLM_BASE_URL): the LLM's loop
    can run. As the Action decides it for its repair pull request (bot.modes.repair)."""
    llm = config.llm.with_env(settings.environ)
    return bool(settings.environ.get(llm.api_key_env)) or bool(llm.base_url)


def run_offline(
    req: OfflineRequest, settings: Settings, *, say: Callable[[str], None] = lambda _: None
) -> RepairOutcome:
    """Find the partial revert of the KB changes since the base commit that broke the regressed cases, verify it
    on the whole suite, and write it to the KB files when it holds (never under `dry_run`)."""
    head = _head_statuses(req)
    comparison = _comparison(req)
    regressed = tuple(c.id for c in comparison.judged_as("regressed") if c.id in head)
    base_rate = comparison.overall.base_rate
    if not regressed:
        note = (
            "no LLM configured, and no case regressed between the base run and this one: a partial revert "
            "has nothing to restore; nothing was written"
        )
        return _outcome(req, head, RevertRecord(note=note), base_rate=base_rate)
    repo, sha = _base_commit(req, settings)
    kb = KBFiles.from_config(req.config)
    recover(kb)  # a repair killed earlier: put its files back before the tree is copied
    server = provision_server(req.dsn, req.config, settings, req.postgres)
    say(
        f"no LLM configured: finding which KB change since {sha[:12]} broke {len(regressed)} regressed case(s) "
        f"(at most {req.max_agent_calls} agent calls) and verifying its partial revert on the whole suite"
    )
    diff = req.differ(repo, sha)
    with worktree(repo, sha, label="base", environ=settings.environ) as base_root:
        request = CauseRequest(
            diff,
            config=req.config,
            base_root=base_root,
            head_root=repo,
            suite=req.suite,
            head=head,
            regressed=regressed,
            base_pass_rate=base_rate,
            max_agent_calls=req.max_agent_calls,
        )
        found = find_causes(request, server=server, settings=settings)
    files = _kb_files(found.revert, req.config, repo)
    applied = found.revert.holds and not req.dry_run
    before = {rel: kb.read(rel) for rel in files}
    if applied:
        with Transaction(kb) as tx:
            before = tx.apply(files)
            tx.commit()
    record = _record(found.revert, regressed, sha, unified_diff(before, files), applied=applied)
    record = record.model_copy(update={"agent_calls": found.agent_calls})
    changed = tuple(sorted(rel for rel, text in files.items() if before.get(rel) != text)) if applied else ()
    outcome = _outcome(req, head, record, base_rate=base_rate, revert=found.revert, changed=changed)
    return outcome.model_copy(update={"issues_found": causal_notes(found)})


def _head_statuses(req: OfflineRequest) -> dict[str, str]:
    """{case id: status} of the head run over the whole suite: the revert is verified on every case."""
    have = {c.id: c.status for c in req.run.cases}
    ids = [c.id for c in req.suite.cases]
    missing = [i for i in ids if i not in have]
    if missing or not req.run.meta.complete:
        raise ConfigError(
            f"the run holds {len(ids) - len(missing)} of the suite's {len(ids)} case(s)"
            + ("" if req.run.meta.complete else " and is marked incomplete")
            + ": the partial revert is verified on the whole suite; give a complete run of it (`sqlcanary "
            "check --out DIR` writes one) or configure an LLM",
            path=req.run_file or None,
        )
    return {i: have[i] for i in ids}


def _comparison(req: OfflineRequest) -> Comparison:
    """The check's comparison of these runs, else the base run against the head run under the config's gate."""
    if req.comparison is not None and req.comparison.head == req.run.meta:
        return req.comparison
    cmp = compare_runs(req.base, req.run, gate=resolve_gate(req.config.gate, {}))
    if cmp.verdict == "incomparable":
        why = "; ".join(cmp.reasons) or "they differ"
        raise ConfigError(
            f"the base run cannot be compared with the run to repair: {why}", path=req.base_file
        )
    return cmp


def _base_commit(req: OfflineRequest, settings: Settings) -> tuple[Path, str]:
    """The repository holding the config and the base run's commit, which the KB is diffed against."""
    sha = req.base.meta.git_sha
    if not sha:
        raise ConfigError(
            "the base run records no commit (`git_sha`): the partial revert diffs the KB against the base "
            "commit; give a run made in this repository (`sqlcanary check --out DIR`, then --from-check DIR)",
            path=req.base_file or None,
        )
    repo = repo_root(Path(req.config.base_dir), environ=settings.environ)
    if repo is None:
        raise ConfigError(
            "the config's folder is not in a git repository: the partial revert diffs the KB against the base "
            f"commit {sha[:12]}",
            path=str(req.config.base_dir),
        )
    return repo, sha


def _kb_files(revert: RevertCandidate, config: Config, repo: Path) -> dict[str, str | None]:
    """The revert's files as KB paths (relative to the config's folder): only KB files are ever written."""
    out: dict[str, str | None] = {}
    for path, text in revert.files.items():
        rel = kb_relative(path, config, repo)
        if rel is None:  # attribution reverts KB changes only (bot.attribution.hunks.kb_changes)
            raise SqlcanaryError(f"{path}: the partial revert names a file outside the KB")
        out[rel] = text
    return out


def _record(
    revert: RevertCandidate, regressed: tuple[str, ...], sha: str, diff: str, *, applied: bool
) -> RevertRecord:
    what = "; ".join(c.describe() for c in revert.reverted)
    restored = revert.restored
    if not revert.holds:
        note = (
            f"no LLM configured, and no verified partial revert holds: {revert.reason}; nothing was written "
            "(configure an LLM for the repair loop, or revert the change by hand)"
        )
    elif applied:
        note = (
            f"no LLM configured: applied the verified partial revert of {what}, restoring {len(restored)} "
            f"case(s) ({', '.join(restored)})"
        )
    else:
        note = (
            f"no LLM configured (dry run): the verified partial revert of {what} would restore {len(restored)} "
            f"case(s) ({', '.join(restored)}); nothing was written"
        )
    return RevertRecord(
        note=note,
        holds=revert.holds,
        applied=applied,
        reason=revert.reason,
        base_sha=sha,
        regressed=regressed,
        reverted=tuple(c.describe() for c in revert.reverted),
        kept=tuple(c.describe() for c in revert.kept),
        restored=restored,
        diff=diff,
    )


def _counts(statuses: Mapping[str, str]) -> Counts:
    values = list(statuses.values())
    return Counts(
        total=len(values), **{s: values.count(s) for s in ("passed", "failed", "invalid", "errored")}
    )


def _cases(
    req: OfflineRequest, head: Mapping[str, str], record: RevertRecord, revert: RevertCandidate | None
) -> list[CaseRepair]:
    """The head's failing cases: each regressed one with the revert's verdict, the others as not the KB's."""
    verdicts = {c.id: c for c in revert.cases} if revert is not None else {}
    questions = {c.id: c.question for c in req.suite.cases}
    cases = []
    for case_id, status in head.items():
        if status == "passed":
            continue
        seen = verdicts.get(case_id)
        fixed = record.applied and seen is not None and seen.reverted == "passed"
        if case_id not in record.regressed:
            note = "not a regression (it does not pass at the base either): no revert restores it"
        elif seen is None:
            note = record.reason or record.note
        elif seen.reverted == "passed":
            note = "restored by the partial revert" + ("" if record.applied else " (not applied)")
        else:
            note = f"still fails with the partial revert: {seen.reason or seen.verdict.replace('_', ' ')}"
        cases.append(
            CaseRepair(
                id=case_id,
                question=questions.get(case_id, ""),
                before=status,
                after=seen.reverted if fixed and seen else status,
                repaired=fixed,
                note=note,
            )
        )
    return cases


def _outcome(
    req: OfflineRequest,
    head: Mapping[str, str],
    record: RevertRecord,
    *,
    base_rate: float | None,
    revert: RevertCandidate | None = None,
    changed: tuple[str, ...] = (),
) -> RepairOutcome:
    final = dict(head)
    if revert is not None and record.applied:
        final.update({c.id: c.reverted for c in revert.cases})
    return RepairOutcome(
        suite=req.suite.name,
        dry_run=req.dry_run,
        cases=tuple(_cases(req, head, record, revert)),
        files_changed=changed,
        kb_diff=record.diff if record.applied else "",
        improvements_made=(record.note,) if record.applied else (),
        base_pass_rate=base_rate,
        head_pass_rate=pass_rate(head.values()),
        repaired_pass_rate=pass_rate(final.values()),
        counts_before=_counts(head),
        counts_after=_counts(final),
        final_statuses=dict(sorted(final.items())),
        revert=record,
    )


def revert_commit_message(outcome: RepairOutcome) -> str:
    """The commit of an applied partial revert: what it reverts and which cases it restores."""
    record = outcome.revert
    if record is None:
        raise ValueError("not a repair without an LLM")
    lines = [f"sqlcanary repair: partial revert restoring {len(record.restored)} regressed case(s)", ""]
    lines += [f"- reverts {what} (its line(s) at {record.base_sha[:12]})" for what in record.reverted]
    lines += [f"- restores {case}" for case in record.restored]
    return "\n".join([*lines, "", "KB files: " + ", ".join(outcome.files_changed)]) + "\n"


def offline_text(outcome: RepairOutcome) -> str:
    """The terminal's word on a repair without an LLM: what was done (or why nothing), the changes reverted and
    kept, and under --dry-run the diff that was not applied."""
    record = outcome.revert
    if record is None:
        return ""
    lines = [record.note]
    lines += [f"  reverted: {what}" for what in record.reverted]
    lines += [f"  kept: {what}" for what in record.kept]
    if record.holds and not record.applied and record.diff:
        lines += ["", record.diff.rstrip("\n")]
    return "\n".join(lines)
