"""Workflow commands and the runner's files, read back the way actions/runner reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.github import workflow
from tests.conftest import shared_dir
from tests.support.github_runner_files import parse_command, parse_outputs

REPO = Path(__file__).resolve().parents[2]


def test_data_escaping_keeps_a_message_on_one_line():
    line = workflow.error("100% broken\r\nsecond line ::warning::forged")
    assert line == "::error::100%25 broken%0D%0Asecond line ::warning::forged"
    assert "\n" not in line
    assert parse_command(line) == ("error", {}, "100% broken\r\nsecond line ::warning::forged")


def test_property_escaping_covers_colons_and_commas():
    line = workflow.warning("regressed", title="case a,b: c", file="cases/x,y.yml", line=3, end_line=4)
    assert line == "::warning title=case a%2Cb%3A c,file=cases/x%2Cy.yml,line=3,endLine=4::regressed"
    assert parse_command(line) == (
        "warning",
        {"title": "case a,b: c", "file": "cases/x,y.yml", "line": "3", "endLine": "4"},
        "regressed",
    )
    assert workflow.notice("fork PR: evaluate only") == "::notice::fork PR: evaluate only"
    assert workflow.error("x", col=2, end_column=5) == "::error col=2,endColumn=5::x"


def test_add_mask_masks_every_line_of_a_multi_line_secret_once():
    assert workflow.add_mask("sk-abc%def") == ["::add-mask::sk-abc%25def"]
    pem = "-----BEGIN KEY-----\nAAAA\r\nBBBB\n\nAAAA\n-----END KEY-----\n"
    assert workflow.add_mask(pem) == [
        "::add-mask::-----BEGIN KEY-----",
        "::add-mask::AAAA",
        "::add-mask::BBBB",
        "::add-mask::-----END KEY-----",
    ]
    assert workflow.add_mask("") == [] and workflow.add_mask("  \n ") == []


def test_outputs_round_trip_single_and_multi_line_values(tmp_path):
    path = tmp_path / "github_output"
    path.write_text("earlier=step\n")
    report = "## sqlcanary\n\n| case | verdict |\n|---|---|\n| a=b | regressed |\nEOF\n"
    workflow.write_outputs(
        path,
        {
            "verdict": "regressed",
            "regressions": 2,
            "pass-rate-head": 0.875,
            "gate": False,
            "report": report,
            "repair-pr-number": None,
            "crlf": "a\r\nb",
        },
    )
    assert parse_outputs(path) == {
        "earlier": "step",
        "verdict": "regressed",
        "regressions": "2",
        "pass-rate-head": "0.875",
        "gate": "false",
        "report": report,
        "repair-pr-number": "",
        "crlf": "a\nb",
    }


def test_a_value_cannot_close_its_own_heredoc(tmp_path):
    path = tmp_path / "out"
    hostile = "line\nghadelimiter_x\nevil=1\n"
    workflow.write_outputs(path, {"text": hostile})
    workflow.write_outputs(path, {"text2": hostile})
    first, second = (line for line in path.read_text().splitlines() if "<<" in line)
    assert first.split("<<")[1] != second.split("<<")[1]  # a fresh random delimiter each time
    assert parse_outputs(path) == {"text": hostile, "text2": hostile}


@pytest.mark.parametrize("name", ["", "has space", "9lives", "a=b", "x<<y"])
def test_bad_output_names_are_refused(tmp_path, name):
    with pytest.raises(ValueError, match="output name"):
        workflow.write_outputs(tmp_path / "out", {name: "v"})


def test_outputs_over_a_megabyte_are_refused(tmp_path):
    with pytest.raises(ValueError, match="1048576 bytes"):
        workflow.write_outputs(tmp_path / "out", {"big": "x" * (1024 * 1024)})
    assert not (tmp_path / "out").exists()


def test_the_summary_is_appended_and_capped_at_one_mebibyte(tmp_path):
    path = tmp_path / "summary.md"
    assert workflow.append_summary(path, "# run 1\n") == workflow.SummaryWrite(8, False)
    written = workflow.append_summary(path, "é" * 600_000)  # 1.2 MB of two-byte characters
    assert written.truncated and path.stat().st_size <= workflow.MAX_SUMMARY_BYTES
    text = path.read_text(encoding="utf-8")  # never cut inside a character
    assert text.startswith("# run 1\n") and text.endswith("full report is in the artifacts)\n")
    assert workflow.append_summary(path, "more") == workflow.SummaryWrite(0, True)
    assert path.stat().st_size <= workflow.MAX_SUMMARY_BYTES


def test_the_vendored_openapi_description_matches_the_shared_one():
    """tests/fixtures/github holds a copy so a user's clone runs the tests; it must not drift from ../shared."""
    shared = shared_dir()
    if shared is None or not (shared / "github" / "github-bot-openapi.json").exists():
        pytest.skip("../shared is absent: this is a user's clone")
    vendored = REPO / "tests" / "fixtures" / "github" / "github-bot-openapi.json"
    assert json.loads(vendored.read_text()) == json.loads(
        (shared / "github" / "github-bot-openapi.json").read_text()
    )
