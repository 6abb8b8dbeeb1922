"""Issue 17, item 8: the README links only what the repository holds (it linked `design/VERDICTS.md`, which is
not in it), and documents the answer a `command:` agent prints, not only a `python:` agent's."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_every_relative_link_and_named_design_file_exists() -> None:
    targets = re.findall(r"\]\(([^)\s]+)\)", README)
    local = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:|#", t)]
    missing = [t for t in local if t and not (REPO / t).exists()]
    assert not missing, missing
    named = set(re.findall(r"`((?:design|docs)/[\w./-]+\.md)`", README))
    assert not [n for n in named if not (REPO / n).exists()], named


def test_the_command_agent_answer_shape_is_documented() -> None:
    line = next(i for i, text in enumerate(README.splitlines()) if text.strip().startswith("- `command:CMD`"))
    entry = "\n".join(README.splitlines()[line : line + 4])
    assert '{"sql": ' in entry and '"used"' in entry and '{"error": ' in entry
