"""The check run as a check sent it, or (for a fork, or one shard of a check) would have sent it: what the sticky
comment and the check run are built from, and what a leg's `github-payload.json` records of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.github.checks import Annotation


@dataclass(frozen=True)
class CheckPayload:
    """The check run as it was (or, for a fork, would be) sent."""

    name: str
    head_sha: str
    conclusion: str
    title: str
    summary: str
    annotations: tuple[Annotation, ...]
    comment: str
    comment_marker: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "head_sha": self.head_sha,
            "conclusion": self.conclusion,
            "title": self.title,
            "summary": self.summary,
            "annotations": [a.to_api() for a in self.annotations],
            "comment_marker": self.comment_marker,
        }
