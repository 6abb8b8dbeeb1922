"""Issue 17, findings 4 and 5 end to end: `sqlcanary check` of a change outside the KB names the changed file no
answer cites under "not explained" (comment and HTML), and writes report.html beside comment.md with the causes
section and the runs' latency; `sqlcanary report comparison.json --format html` then shows the same sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.cli import main
from bot.compare.comparison import Comparison
from tests.integration.test_causes_check import SUITE, first_section, shop_repo  # noqa: F401 (fixture)
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

COMPOSE = f"{SUITE}/shopagent/compose.py"


def sections(html: str) -> list[str]:
    return re.findall(r'<(?:section|h2|figure) id="([^"]+)"', html)


def test_a_change_no_answer_cites_is_named_and_report_html_agrees(
    shop_repo: Path,  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    git(shop_repo, "checkout", "-q", "-b", "agent-only", "main")
    compose = shop_repo / COMPOSE
    compose.write_text(compose.read_text().replace('"avg": "avg({e})"', '"avg": "sum({e})"'))
    git(shop_repo, "commit", "-q", "-am", "agent: sum instead of avg")
    git(shop_repo, "checkout", "-q", "main")
    out = tmp_path / "out"
    argv = [
        "check",
        SUITE,
        "--base",
        "main",
        "--head",
        "agent-only",
        "--dsn",
        pg_dsn,
        "--out",
        str(out),
        "-q",
    ]
    assert main([*argv, "--id", "shop-traffic-dau-*"]) == 1
    comparison = Comparison.model_validate_json((out / "comparison.json").read_text())
    assert comparison.unexplained and comparison.uncited_files == (COMPOSE,)
    section = first_section((out / "comment.md").read_text())
    assert f"The change touched only `{COMPOSE}`, which no answer cites." in section
    html = (out / "report.html").read_text()
    assert f"<code>{COMPOSE}</code>, which no answer cites" in html.replace("<wbr>", "")
    latency = html[html.index('id="chart-latency"') :]
    assert latency.index("<svg") < latency.index("</figure>"), "check's report.html has no latency chart"
    again = tmp_path / "again.html"
    assert main(["report", str(out / "comparison.json"), "--format", "html", "--out", str(again)]) == 0
    assert sections(again.read_text()) == sections(html) and "causes" in sections(html)
