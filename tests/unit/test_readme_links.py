"""Issue 17, item 8: the README links only what the repository holds (it linked `design/VERDICTS.md`, which is
not in it); issue 25, item 10: the agent contract (what a `command:` agent gets and prints) is in one place."""

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


def test_the_agent_contract_is_in_one_place() -> None:
    """The request, every answer shape, failures and the sandbox's needs live in one section (issue 25, item 10),
    and the other places that mention agents point there instead of restating it."""
    section = re.search(r"^## The agent contract\n(.*?)^## ", README, re.S | re.M)
    assert section, "README.md has no '## The agent contract' section"
    text = section.group(1)
    for shape in (
        '{"sql": ',
        '"used": ',
        '{"error": ',
        '"question": ',
        '"attempt": ',
        "`command:CMD`",
        "`python:",
    ):
        assert shape in text, shape
    for topic in ("timeout", "1 MiB", "agent.env", "--sandbox", "agent.inputs", "persistent"):
        assert topic in text, topic
    elsewhere = README.replace(section.group(0), "")
    assert '{"error": "why not"}' not in elsewhere  # the answer shapes are not restated in a second place
    assert elsewhere.count("(#the-agent-contract)") >= 2
