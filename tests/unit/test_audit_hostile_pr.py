"""Issue 23, item 7, without a database: a KB file that is a hard link or sits behind a linked folder is never
written through; a run whose agent answered nothing is never judged a pass; nothing judged is never green."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.base.results import RunResult, read_run
from bot.compare.comparison import compare_head_only, compare_runs
from bot.compare.gate import check_conclusion
from bot.config.model import Config, KBConfig
from bot.kb.files import KBFiles, RefusedPath
from bot.repair.transaction import Transaction

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "tables.yaml").write_text("tables: {}\n")
    (tmp_path / "sqlcanary.yml").write_text("suite: .\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: pull_request\n")
    return tmp_path


def kbfiles(root: Path) -> KBFiles:
    return KBFiles.from_config(Config(base_dir=str(root), kb=KBConfig(paths=("kb/**/*.yaml", "kb/*.yaml"))))


def test_a_hard_link_to_a_non_kb_file_is_neither_read_nor_written(repo: Path):
    os.link(repo / "sqlcanary.yml", repo / "kb" / "config.yaml")
    kb = kbfiles(repo)
    with pytest.raises(RefusedPath, match="hard link"):
        kb.resolve("kb/config.yaml")
    assert "kb/config.yaml" not in kb.files()
    with Transaction(kb) as tx, pytest.raises(RefusedPath, match="hard link"):
        tx.apply({"kb/config.yaml": "suite: /etc\n"})
    assert (repo / "sqlcanary.yml").read_text() == "suite: .\n"


def test_a_linked_folder_inside_the_kb_is_never_written_through(repo: Path):
    (repo / "kb" / "wf").symlink_to(repo / ".github" / "workflows", target_is_directory=True)
    (repo / "kb" / "ci.yaml").symlink_to("../.github/workflows/ci.yml")
    kb = kbfiles(repo)
    for path in ("kb/wf/ci.yaml", "kb/wf/new.yaml", "kb/ci.yaml"):
        with pytest.raises(RefusedPath, match="symlink"):
            kb.resolve(path)
    assert set(kb.files()) == {"kb/tables.yaml"}
    assert sorted(os.listdir(repo / ".github" / "workflows")) == ["ci.yml"]


def _unanswered(run: RunResult, error_class: str) -> RunResult:
    cases = tuple(
        c.model_copy(update={"status": "errored", "error_class": error_class, "attempts": ()})
        for c in run.cases
    )
    return run.model_copy(update={"cases": cases})


def test_a_starved_base_or_a_head_that_answers_nothing_is_never_a_pass():
    base, head = read_run(RUNS / "k1_base.json"), read_run(RUNS / "k1_head.json")
    starved = compare_runs(_unanswered(base, "agent_timeout"), head)
    assert starved.verdict == "incomparable"
    assert any("base run's agent answered none" in r and "agent_timeout" in r for r in starved.reasons)
    both = compare_runs(_unanswered(base, "agent_crashed"), _unanswered(head, "agent_bad_output"))
    assert both.verdict == "incomparable" and len(both.reasons) == 2
    alone = compare_head_only(_unanswered(head, "agent_timeout"))
    assert alone.verdict == "incomparable" and "head run's agent answered none" in alone.reasons[0]
    assert compare_runs(base, head).verdict != "incomparable"  # a run with answers is judged as before


@pytest.mark.parametrize("enforce", [True, False])
def test_nothing_judged_is_a_failed_check_run(enforce: bool):
    assert check_conclusion("incomparable", enforce=enforce) == "failure"
