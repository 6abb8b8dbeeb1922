"""What a repair pull request is made of, checked before anything is written remotely: the source pull request it
stacks on, the KB files to write (each path checked once more against the caller's rule and the paths no repair may
ever write), the commit message, the title, and the body (with its hidden marker, never over GitHub's limit)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from bot.base.errors import SqlcanaryError
from bot.kb.files import glob_regex

BODY_LIMIT = (
    65_536  # characters GitHub accepts in a pull request body or a comment (../shared/github/limits.json)
)
BRANCH_PREFIX = "sqlcanary/repair/pr-"
LABEL = "sqlcanary-repair"
NEVER_WRITTEN = (".git", ".github", ".sqlcanary")  # folders no repair writes, whatever the rule says
_CUT_NOTE = "\n\n… (cut: the body was longer than GitHub's 65,536 characters)\n"
_SHA = re.compile(r"^[0-9a-f]{40}$")

# The caller's path rule: a function answering why a repository-relative path may not be written (None: it may),
# as bot.kb.files.KBFiles.allowed does, or `kb.paths`-style globs relative to the repository root.
PathRule = Callable[[str], str | None] | tuple[str, ...]


class RepairPathRefused(SqlcanaryError):
    """A file the repair pull request would write is not a KB file it may write; nothing was written."""


@dataclass(frozen=True)
class RepairTarget:
    """The source pull request a repair stacks on: same repository, its head branch and the event's head sha."""

    repository: str  # owner/name
    pr_number: int
    head_branch: str
    head_sha: (
        str  # the event's pull_request.head.sha: the repair commit's parent (the checkout may be a merge)
    )

    def __post_init__(self) -> None:
        if self.repository.count("/") != 1 or not all(self.repository.split("/")):
            raise SqlcanaryError(f"not a repository name (owner/name): {self.repository!r}")
        if self.pr_number < 1:
            raise SqlcanaryError(f"not a pull request number: {self.pr_number!r}")
        if not _SHA.match(self.head_sha):
            raise SqlcanaryError(f"not a commit sha (pull_request.head.sha): {self.head_sha!r}")
        if not self.head_branch:
            raise SqlcanaryError("the source pull request's head branch is empty")

    @property
    def owner(self) -> str:
        return self.repository.split("/")[0]

    @property
    def branch(self) -> str:
        return f"{BRANCH_PREFIX}{self.pr_number}"

    @property
    def marker(self) -> str:
        """The hidden line that finds the repair pull request of this source pull request again."""
        return f"<!-- sqlcanary:repair:pr-{self.pr_number} -->"


@dataclass(frozen=True)
class RepairChange:
    """One repair: the files to write on top of the source pull request's head, and the pull request to show it."""

    target: RepairTarget
    files: Mapping[str, str]  # repository-relative posix path -> the file's new text
    allowed: PathRule
    commit_message: str
    title: str  # `sqlcanary: repair <n> regressions from #<pr>`
    body: str  # rendered by the caller; the marker is added when missing and the body cut at BODY_LIMIT

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))
        if not self.files:
            raise SqlcanaryError("a repair change writes no file: close the repair pull request instead")
        if not self.commit_message.strip() or not self.title.strip():
            raise SqlcanaryError("a repair change needs a commit message and a title")
        check_paths(self.files, self.allowed)

    @property
    def pull_body(self) -> str:
        return fit_body(self.body, self.target.marker)


def refusal(path: str, allowed: PathRule) -> str | None:
    """Why the repair may not write `path` (a repository-relative posix path), or None when it may."""
    if not isinstance(path, str) or not path.strip():
        return "an empty path"
    if any(ord(ch) < 32 for ch in path) or "\\" in path:
        return f"{path!r}: control characters or backslashes in a path"
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", path):
        return f"{path!r}: an absolute path"
    parts = path.split("/")
    if ".." in parts:
        return f"{path!r}: `..` in a path"
    if any(p in ("", ".") for p in parts):
        return f"{path!r}: an empty or `.` path segment"
    if any(p.lower() in NEVER_WRITTEN for p in parts):
        return f"{path!r}: files under {', '.join(d + '/' for d in NEVER_WRITTEN)} are never written"
    if callable(allowed):
        return allowed(path)
    if not any(glob_regex(g).match(path) for g in allowed):
        return f"{path!r}: not a KB file (not matched by {', '.join(allowed) or 'any KB path'})"
    return None


def check_paths(files: Mapping[str, object], allowed: PathRule) -> None:
    """RepairPathRefused naming every path the repair may not write; nothing is written then."""
    refused = [reason for path in sorted(files) if (reason := refusal(path, allowed))]
    if refused:
        raise RepairPathRefused(
            "the repair pull request may write KB files only; refused: " + "; ".join(refused)
        )
    bad = sorted(p for p, text in files.items() if not isinstance(text, str))
    if bad:
        raise RepairPathRefused(f"a repair file's new content must be text: {', '.join(bad)}")


def fit_body(body: str, marker: str) -> str:
    """`body` with `marker` in it (at the top when it was missing) and never longer than BODY_LIMIT characters.

    Cutting cleanly (closing fences and `<details>`) is the renderer's job; this is the last guard, so that a
    request GitHub would refuse is never sent and the marker survives the cut."""
    if marker not in body:
        body = f"{marker}\n{body}"
    if len(body) <= BODY_LIMIT:
        return body
    if not body.startswith(marker):
        body = f"{marker}\n{body}"
    return body[: BODY_LIMIT - len(_CUT_NOTE)] + _CUT_NOTE
