"""The sticky pull-request comment: one per (suite, matrix key), edited in place, never reposted.

A comment is ours when it holds the hidden marker AND was written by our own login (py-cov-action's rule): a
human who quotes the marker, or another bot, must never have their comment overwritten. An unchanged body sends
no request at all, so re-running a job does not bump the PR's "edited" history or notify anyone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from github.Repository import Repository

from bot.base.textfilters import show_invisible
from bot.github.errors import API_ERRORS, api_error
from bot.report.marker import comment_marker

MAX_COMMENT_CHARS = 65_536  # GitHub answers 422 "Body is too long" above this (limits.json)

CommentAction = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class CommentResult:
    action: CommentAction
    comment_id: int
    url: str  # the comment's html_url, for the job summary and outputs


def hidden_marker(key: str) -> str:
    """The invisible marker of one sticky comment, e.g. `<!-- sqlcanary:comment:shop/py3.12 -->`.

    `key` names the suite and matrix key so several suites or jobs on one PR never overwrite each other. The
    report layer writes the same marker into the comment (bot.report.marker, `render("md", marker_key=...)`);
    turn free text into a key with bot.report.marker.marker_key. An empty or unsafe key raises ValueError."""
    if not key:
        raise ValueError("comment marker key must not be empty")
    return comment_marker(key)


def _normalise(body: str) -> str:
    return body.replace("\r\n", "\n").rstrip()


def upsert_sticky_comment(
    repo: Repository, pr_number: int, body: str, *, marker: str, author_login: str
) -> CommentResult:
    """Create, edit or leave alone the comment of `pr_number` that holds `marker` and was written by `author_login`.

    The marker is put at the top of `body` when the caller left it out (otherwise the next run could not find the
    comment and would post a second one). `author_login` comes from `resolve_login` (github-actions[bot] for a
    GITHUB_TOKEN). Bodies over 65,536 characters are refused: the report layer truncates them cleanly first.
    The unchanged test ignores CRLF versus LF and trailing whitespace, which GitHub may normalise on its side.
    Bidi and zero-width controls are shown escaped (bot.base.textfilters.show_invisible), as in every report."""
    if not marker:
        raise ValueError("the sticky comment needs a non-empty marker")
    body = show_invisible(body)
    if marker not in body:
        body = f"{marker}\n{body}"
    if len(body) > MAX_COMMENT_CHARS:
        raise ValueError(
            f"comment body has {len(body)} characters, GitHub accepts {MAX_COMMENT_CHARS}: truncate it in the report"
        )
    issue = repo.get_issue(pr_number)  # lazy: no request
    try:
        for comment in issue.get_comments():
            if comment.user.login != author_login or marker not in (comment.body or ""):
                continue
            if _normalise(comment.body) == _normalise(body):
                return CommentResult("unchanged", comment.id, comment.html_url)
            comment.edit(body)
            return CommentResult("updated", comment.id, comment.html_url)
        created = issue.create_comment(body)
    except API_ERRORS as exc:
        raise api_error(f"comment on pull request #{pr_number}", exc) from exc
    return CommentResult("created", created.id, created.html_url)
