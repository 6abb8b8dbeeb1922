"""The repair pull request's title and commit message count what the repair fixes, of what regressed, and
never drop a case silently (bot.modes.repair)."""

from __future__ import annotations

from bot.modes.repair import SHOWN_FIXES, _message, repair_title


def test_the_title_says_how_many_of_the_regressed_cases_the_repair_fixes() -> None:
    regressed = ("a", "b", "c")
    assert repair_title(7, ("a",), regressed) == "sqlcanary: repair 1 of 3 regressed cases from #7"
    assert repair_title(7, regressed, regressed) == "sqlcanary: repair 3 regressed cases from #7"
    assert repair_title(7, ("a",), ("a",)) == "sqlcanary: repair 1 regressed case from #7"


def test_the_commit_message_counts_every_fixed_case_and_lists_the_first() -> None:
    fixed = tuple(f"case-{i}" for i in range(SHOWN_FIXES + 5))
    text = _message(3, fixed, {"kb/b.yml": "", "kb/a.yml": ""})
    lines = text.splitlines()
    assert lines[0] == f"sqlcanary: repair {SHOWN_FIXES + 5} regressed cases from #3"
    assert sum(line.startswith("- fixes ") for line in lines) == SHOWN_FIXES
    assert "- and 5 more" in lines
    assert lines[-1] == "KB files: kb/a.yml, kb/b.yml"
