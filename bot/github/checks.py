"""The check run (with annotations on case-file and KB lines), or a commit status when the token cannot write checks.
Its title, summary and annotations show bidi and zero-width controls escaped, like every report.

GitHub takes at most 50 annotations per request and appends the annotations of every PATCH, so the run is created
with the first 50 and PATCHed with the rest in batches of 50. A token without `checks: write` (a GITHUB_TOKEN under
restricted permissions) answers 403: the verdict still reaches the PR as a commit status."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from github import GithubException, RateLimitExceededException
from github.Repository import Repository

from bot.base.textfilters import show_invisible
from bot.github.errors import API_ERRORS, api_error

ANNOTATIONS_PER_REQUEST = 50
MAX_OUTPUT_CHARS = 65_535  # output.summary and output.text (limits.json)
MAX_TITLE_CHARS = 255
MAX_ANNOTATION_MESSAGE_BYTES = 64 * 1024
MAX_STATUS_DESCRIPTION_CHARS = 140
_TRUNCATED = "\n\n… (truncated: the full report is in the job summary and the artifacts)"

Conclusion = Literal["success", "failure", "neutral"]
AnnotationLevel = Literal["notice", "warning", "failure"]
_STATUS_STATE: dict[str, str] = {"success": "success", "failure": "failure", "neutral": "success"}


@dataclass(frozen=True)
class Annotation:
    path: str  # relative to the repository root, forward slashes
    start_line: int
    end_line: int
    level: AnnotationLevel
    message: str
    title: str = ""

    def to_api(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": max(self.end_line, self.start_line),
            "annotation_level": self.level,
            "message": truncate_bytes(show_invisible(self.message), MAX_ANNOTATION_MESSAGE_BYTES),
        }
        if self.title:
            data["title"] = truncate_chars(show_invisible(self.title), MAX_TITLE_CHARS)
        return data


@dataclass(frozen=True)
class CheckPublication:
    via: Literal["check_run", "commit_status", "none"]
    url: str
    check_run_id: int | None
    annotations_sent: int
    annotations_dropped: int  # on paths the caller did not list as files of the repository
    detail: str = ""  # why the fallback was taken


def truncate_chars(text: str, limit: int, suffix: str = "…") -> str:
    return text if len(text) <= limit else text[: limit - len(suffix)] + suffix


def truncate_bytes(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - len("…".encode())].decode("utf-8", errors="ignore") + "…"


def _fit_output(text: str) -> str:
    """A safety net under the report layer, which truncates cleanly; GitHub would answer 422 above the limit.
    Bidi and zero-width controls are shown escaped (bot.base.textfilters.show_invisible), as in every report."""
    text = show_invisible(text)
    return text if len(text) <= MAX_OUTPUT_CHARS else text[: MAX_OUTPUT_CHARS - len(_TRUNCATED)] + _TRUNCATED


def _forbidden(exc: Exception) -> bool:
    """A 403 that means "this token may not": a rate-limit 403 is raised, never taken for a missing permission."""
    return (
        isinstance(exc, GithubException)
        and exc.status == 403
        and not isinstance(exc, RateLimitExceededException)
    )


def _normal_path(path: str) -> str:
    return path.replace("\\", "/").removeprefix("./")


def publish_check_run(
    repo: Repository,
    *,
    name: str,
    head_sha: str,
    conclusion: Conclusion,
    title: str,
    summary: str,
    text: str = "",
    annotations: Sequence[Annotation] = (),
    repo_paths: Collection[str] = (),
    details_url: str | None = None,
) -> CheckPublication:
    """Publish one completed check run on `head_sha`; on a 403 fall back to a commit status named `name`.

    `repo_paths` are the files the caller knows to be in the repository at `head_sha`: annotations elsewhere
    (a temp dir, a path outside the checkout) are dropped, as GitHub would reject or misplace them."""
    known = {_normal_path(p) for p in repo_paths}
    kept = [a for a in annotations if _normal_path(a.path) in known]
    batches = [
        [a.to_api() | {"path": _normal_path(a.path)} for a in kept[i : i + ANNOTATIONS_PER_REQUEST]]
        for i in range(0, len(kept), ANNOTATIONS_PER_REQUEST)
    ] or [[]]
    output: dict[str, Any] = {
        "title": truncate_chars(show_invisible(title), MAX_TITLE_CHARS),
        "summary": _fit_output(summary),
    }
    if text:
        output["text"] = _fit_output(text)
    extra: dict[str, Any] = {"details_url": details_url} if details_url else {}
    try:
        run = repo.create_check_run(
            name,
            head_sha,
            status="completed",
            conclusion=conclusion,
            output=output | ({"annotations": batches[0]} if batches[0] else {}),
            **extra,
        )
    except API_ERRORS as exc:
        if not _forbidden(exc):
            raise api_error(f"create check run {name!r}", exc) from exc
        assert isinstance(exc, GithubException)
        return _publish_status(
            repo,
            name=name,
            head_sha=head_sha,
            conclusion=conclusion,
            title=title,
            details_url=details_url,
            dropped=len(annotations) - len(kept),
            why=f"check runs refused (HTTP 403: {exc.message}); posted a commit status",
        )
    try:
        for batch in batches[1:]:
            run.edit(output=output | {"annotations": batch})
    except API_ERRORS as exc:
        raise api_error(f"add annotations to check run {name!r}", exc) from exc
    return CheckPublication("check_run", run.html_url, run.id, len(kept), len(annotations) - len(kept))


def _publish_status(
    repo: Repository,
    *,
    name: str,
    head_sha: str,
    conclusion: Conclusion,
    title: str,
    details_url: str | None,
    dropped: int,
    why: str,
) -> CheckPublication:
    """The commit status that stands in for a check run: state, ≤ 140 characters, context = the check's name."""
    payload: dict[str, Any] = {
        "state": _STATUS_STATE[conclusion],
        "description": truncate_chars(" ".join(show_invisible(title).split()), MAX_STATUS_DESCRIPTION_CHARS),
        "context": name,
    }
    if details_url:
        payload["target_url"] = details_url
    try:
        status = repo.get_commit(head_sha).create_status(**payload)
    except API_ERRORS as exc:
        if not _forbidden(exc):
            raise api_error(f"create commit status {name!r}", exc) from exc
        assert isinstance(exc, GithubException)
        detail = f"{why}; the commit status was refused too (HTTP 403: {exc.message}): see the job summary"
        return CheckPublication("none", "", None, 0, dropped, detail)
    return CheckPublication("commit_status", status.url, None, 0, dropped, why)
