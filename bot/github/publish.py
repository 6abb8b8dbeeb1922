"""What the action shows: the sticky comment, the check run with annotations, the job summary, the HTML report
and the step outputs. Text is rendered once, with every secret masked; a fork's run writes it to files instead of
sending it (a `workflow_run` job with a write token posts it, treating the files as untrusted data)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.git import Git, git_environment, repo_root
from bot.base.results import RunResult, write_json_atomic
from bot.base.secrets import scrub
from bot.base.settings import Settings
from bot.check.pipeline import CheckResult
from bot.compare.comparison import Comparison
from bot.compare.gate import check_conclusion
from bot.github.checks import Annotation, publish_check_run
from bot.github.client import get_repository, resolve_login
from bot.github.comment import upsert_sticky_comment
from bot.github.context import ActionContext
from bot.github.leg_payload import leg_payload, write_leg_payload
from bot.github.metric_outputs import metric_outputs, run_metric_outputs
from bot.github.payload import CheckPayload
from bot.github.workflow import StepLog, append_summary, notice, warning, write_outputs
from bot.report.marker import comment_marker, marker_key
from bot.report.render import render

MAX_KB_ANNOTATIONS = (
    200  # KB annotations per run (changed lines, then used spans; the rest are in the report)
)
_NO_TOKEN = "no github-token: the comment and the check run are in the artifacts only"


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def check_title(comparison: Comparison) -> str:
    o = comparison.overall
    rates = (
        f"{_pct(o.base_rate)} → {_pct(o.head_rate)}" if comparison.baseline != "none" else _pct(o.head_rate)
    )
    if comparison.verdict == "incomparable":
        return f"runs cannot be compared: {comparison.reasons[0] if comparison.reasons else ''}"[:200]
    regressed, fixed = len(comparison.judged_as("regressed")), len(comparison.judged_as("fixed"))
    head = "no regressions" if comparison.verdict == "pass" else "gate failed"
    counts = (
        f"{regressed} regressed, {fixed} fixed" if comparison.baseline != "none" else "no baseline: head only"
    )
    return f"{head}: {counts} · pass rate {rates}"


def repo_files(repo: Path, environ: Mapping[str, str] | None = None) -> set[str]:
    out = Git(repo, env=git_environment(environ), timeout=60).run("ls-files", "-z")
    return {p for p in out.stdout.split("\0") if p} if out.returncode == 0 else set()


def _repo_path(path: str, *, bases: tuple[Path, ...], repo: Path, files: set[str]) -> str | None:
    """`path` (relative to one of `bases`) as a path of the repository, when the repository has that file."""
    for base in bases:
        try:
            rel = (base / path).resolve().relative_to(repo).as_posix()
        except ValueError:
            continue
        if rel in files:
            return rel
    return None


def _span(text: str) -> tuple[str, int, int] | None:
    """`kb/metrics/gmv.yaml:3-12` → (path, 3, 12); `file.sql:7` → (path, 7, 7)."""
    path, _, lines = text.rpartition(":")
    first, _, last = lines.partition("-")
    if not path or not first.isdigit() or (last and not last.isdigit()):
        return None
    return path, int(first), int(last or first)


def _cause_notes(comparison: Comparison, files: set[str]) -> list[Annotation]:
    """A warning on the changed KB lines each cause names (bot.compare.causes): where the reviewer reads the diff."""
    notes = []
    for cause in comparison.causes:
        if cause.file not in files:
            continue
        for hunk in cause.hunks:
            first, last = (
                (hunk.new_start, hunk.new_start + hunk.new_count - 1)
                if hunk.new_count
                else (max(hunk.new_start, 1), max(hunk.new_start, 1))
            )
            removed = "" if hunk.new_count else " (lines removed here)"
            notes.append(
                Annotation(
                    path=cause.file,
                    start_line=first,
                    end_line=last,
                    level="warning",
                    title=f"changed here{removed}: {len(cause.cases)} regressed case(s)",
                    message="Regressed cases whose answer used these lines: " + ", ".join(cause.cases),
                )
            )
    return notes


def build_annotations(result: CheckResult, *, workdir: Path, repo: Path, files: set[str]) -> list[Annotation]:
    """A failure on the case-file line of each regressed case, and a warning on the KB lines that explain it:
    the changed lines its answer used (cause linking), else, for a regression the diff does not explain (or
    without cause links), the KB lines its answer used."""
    suite = Path(result.head.meta.suite_path or workdir)
    bases = (suite if suite.is_dir() else suite.parent, workdir)
    comparison = result.comparison
    regressed = comparison.judged_as("regressed")
    notes: list[Annotation] = []
    spans: dict[tuple[str, int, int], list[str]] = {}
    used = {c.id: c.prediction.used for c in result.head.cases}
    explained = {i for cause in comparison.causes for i in cause.cases}
    for change in regressed:
        if change.source and (where := _span(change.source)):
            path = _repo_path(where[0], bases=(repo, workdir), repo=repo, files=files)
            if path:
                notes.append(
                    Annotation(
                        path=path,
                        start_line=where[1],
                        end_line=where[1],
                        level="failure",
                        title=f"regressed: {change.id}",
                        message=f"{change.question}\n{change.reason}".strip(),
                    )
                )
        if change.id in explained:
            continue
        for item in used.get(change.id, ()):
            if (span := _span(item)) and (path := _repo_path(span[0], bases=bases, repo=repo, files=files)):
                spans.setdefault((path, span[1], span[2]), []).append(change.id)
    kb_notes = _cause_notes(comparison, files)
    for (path, first, last), ids in spans.items():
        kb_notes.append(
            Annotation(
                path=path,
                start_line=first,
                end_line=last,
                level="warning",
                title=f"used by {len(ids)} regressed case(s)",
                message="Regressed cases whose answer used these lines: " + ", ".join(ids),
            )
        )
    return notes + kb_notes[:MAX_KB_ANNOTATIONS]


@dataclass
class Publisher:
    ctx: ActionContext
    settings: Settings
    make_github: Callable[[str], Any] | None  # None: an untrusted event, nothing is sent
    workdir: Path
    out_dir: Path
    log: StepLog  # plain lines and our workflow commands (fenced while the action runs)

    @property
    def key(self) -> str:
        return marker_key(self.ctx.key) if self.ctx.key else ""

    @property
    def check_name(self) -> str:
        return f"sqlcanary ({self.ctx.key})" if self.ctx.key else "sqlcanary"

    def _render(self, fmt: str, subject: Any, **kw: Any) -> str:
        return render(fmt, subject, details_url=self.ctx.runner.run_url, secrets=self.settings.secrets, **kw)

    def _reports(
        self, subject: Comparison | RunResult, head: RunResult, base: RunResult | None, *, lead: str = ""
    ) -> str:
        """The summary (appended to the step's) and report.html; returns the comment's Markdown. `lead`, a line
        sqlcanary wrote itself (the repair pull request's number and what it did), goes under the headline."""
        comment = with_lead(self._render("md", subject, head=head, base=base, marker_key=self.key), lead)
        write_json_atomic(self.out_dir / "comment.md", comment)
        write_json_atomic(self.out_dir / "report.html", self._render("html", subject, head=head, base=base))
        if self.ctx.runner.step_summary:
            append_summary(
                self.ctx.runner.step_summary, self._render("summary", subject, head=head, base=base)
            )
        return comment

    def publish_run(self, run: RunResult, *, title: str) -> None:
        self._reports(run, run, None)
        self.log.say(f"sqlcanary: {title}: {run.summary.passed}/{run.summary.total} passed")

    def publish_check(self, result: CheckResult, *, enforce: bool, lead: str = "") -> CheckPayload:
        comparison = result.comparison
        comment = self._reports(comparison, result.head, result.base, lead=lead)
        repo = repo_root(self.workdir, environ=self.settings.environ) or self.workdir.resolve()
        files = repo_files(repo, self.settings.environ)
        payload = CheckPayload(
            name=self.check_name,
            head_sha=self.ctx.event.head_sha or result.head_sha or "",
            conclusion=check_conclusion(comparison.verdict, enforce=enforce),
            title=scrub(check_title(comparison), self.settings.secrets),
            summary=comment.replace(comment_marker(self.key), "", 1).strip(),
            annotations=tuple(build_annotations(result, workdir=self.workdir, repo=repo, files=files)),
            comment=comment,
            comment_marker=comment_marker(self.key),
        )
        if self.make_github is not None:
            self._send(payload, files, self.make_github)
        return payload

    def _send(self, payload: CheckPayload, files: set[str], make_github: Callable[[str], Any]) -> None:
        inputs, event = self.ctx.inputs, self.ctx.event
        if not inputs.github_token:
            self.log.command(warning(_NO_TOKEN))
            return
        github = make_github(inputs.github_token)
        repo = get_repository(github, self.ctx.runner.repository)
        if inputs.comment == "sticky" and event.pr_number:
            login = resolve_login(github)
            done = upsert_sticky_comment(
                repo, event.pr_number, payload.comment, marker=payload.comment_marker, author_login=login
            )
            self.log.say(f"sqlcanary: comment {done.action}: {done.url}")
        if inputs.check_run and payload.head_sha:
            published = publish_check_run(
                repo,
                name=payload.name,
                head_sha=payload.head_sha,
                conclusion=payload.conclusion,  # type: ignore[arg-type]
                title=payload.title,
                summary=payload.summary,
                annotations=payload.annotations,
                repo_paths=files,
                details_url=self.ctx.runner.run_url,
            )
            if published.via != "check_run":
                self.log.command(notice(f"check run not published: {published.detail}"))
            self.log.say(f"sqlcanary: {published.via} published ({published.annotations_sent} annotation(s))")

    def write_outputs(self, outputs: dict[str, str]) -> None:
        if self.ctx.runner.output:
            write_outputs(self.ctx.runner.output, outputs)


def with_lead(comment: str, lead: str) -> str:
    """`lead` as its own paragraph under the comment's headline (the first `## ` line); the comment unchanged
    without one. The lead is sqlcanary's own text (numbers it chose), never text of the pull request."""
    if not lead:
        return comment
    lines = comment.split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith("## ")), 0)
    return "\n".join([*lines[: at + 1], "", lead, *lines[at + 1 :]])


def _rate(rate: float | None) -> str:
    return "" if rate is None else f"{rate:.4f}"


NO_REPAIR = {"repair-pr-number": "", "repair-pr-url": "", "repaired": "", "still-failing": ""}


def outputs_of_check(result: CheckResult, out_dir: Path) -> dict[str, str]:
    c = result.comparison
    return {
        "verdict": c.verdict,
        "regressions": str(len(c.judged_as("regressed"))),
        "fixes": str(len(c.judged_as("fixed"))),
        "pass-rate-head": _rate(c.overall.head_rate),
        "pass-rate-base": _rate(c.overall.base_rate),
        "report-path": str(out_dir / "report.html"),
        "comment-path": str(out_dir / "comment.md"),
        "results-path": str(out_dir / "head.json"),
        **NO_REPAIR,
        **metric_outputs(c),
    }


def outputs_of_run(run: RunResult, path: Path) -> dict[str, str]:
    return {
        "verdict": "pass",
        "regressions": "0",
        "fixes": "0",
        "pass-rate-head": _rate(run.summary.pass_rate),
        "pass-rate-base": "",
        "report-path": str(path.parent / "report.html"),
        "comment-path": str(path.parent / "comment.md"),
        "results-path": str(path),
        **NO_REPAIR,
        **run_metric_outputs(run),
    }


def write_untrusted_payload(
    out_dir: Path, ctx: ActionContext, payload: CheckPayload, result: CheckResult
) -> Path:
    """For the job that posts a leg's results (a fork's, or one shard's): github-payload.json beside head.json,
    base.json and comparison.json (bot.github.leg_payload describes it)."""
    return write_leg_payload(out_dir, leg_payload(ctx, result, payload))
