"""`sqlcanary validate` beyond the config file (bot.validate): every problem of a suite at once (one bad case
hides no other), the KB `kb.paths` names, the agent spec, and a config with errors still checked for the rest.
No database, no agent process."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK
from bot.cli import main
from bot.validate.pipeline import validate
from bot.validate.suite import suite_problems

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"

SUITE = """name: t
databases:
  shop: fixtures/shop.sql
defaults:
  statment_timeout: 30s
"""
CASES = """cases:
  - id: a
    question: A?
    tag: [x]
    gold_sql: SELECT 1
  - id: b
    question: B?
    db: nope
    gold_sql: SELECT 2
  - id: c
    question: C?
    gold_sql: SELEC 3 FROM
  - id: a
    question: A again?
    gold_sql: SELECT 4
    compare: {ab_tol: 1}
"""


def _suite(folder: Path, cases: str = CASES, suite: str = SUITE) -> Path:
    (folder / "cases").mkdir(parents=True, exist_ok=True)
    (folder / "fixtures").mkdir(exist_ok=True)
    (folder / "fixtures" / "shop.sql").write_text("CREATE TABLE t (x int);\n", encoding="utf-8")
    (folder / "suite.yml").write_text(suite, encoding="utf-8")
    (folder / "cases" / "all.yml").write_text(cases, encoding="utf-8")
    return folder


def test_every_problem_of_a_suite_is_reported_at_once(tmp_path: Path) -> None:
    problems, cases = suite_problems(_suite(tmp_path / "s"))
    assert cases is None
    got = {(Path(p.path).name, p.line, p.key, p.case_id): p.message for p in problems}
    assert got.keys() == {
        ("suite.yml", 5, "defaults.statment_timeout", None),
        ("all.yml", 4, "cases[0].tag", "a"),
        ("all.yml", 8, "cases[1]", "b"),
        ("all.yml", 12, "cases[2]", "c"),
        ("all.yml", 13, "cases[3].id", "a"),
        ("all.yml", 16, "cases[3].compare.ab_tol", "a"),
    }, problems
    assert "did you mean `statement_timeout`?" in got[("suite.yml", 5, "defaults.statment_timeout", None)]
    assert "unknown key in a case; did you mean `tags`?" in got[("all.yml", 4, "cases[0].tag", "a")]
    assert "unknown db 'nope'" in got[("all.yml", 8, "cases[1]", "b")]
    assert "does not parse" in got[("all.yml", 12, "cases[2]", "c")]
    assert "duplicate case id (first defined at" in got[("all.yml", 13, "cases[3].id", "a")]
    assert "did you mean `abs_tol`?" in got[("all.yml", 16, "cases[3].compare.ab_tol", "a")]


def test_a_valid_suite_has_no_problem_and_counts_its_cases() -> None:
    assert suite_problems(SHOP) == ([], 84)


def test_a_missing_suite_is_one_problem(tmp_path: Path) -> None:
    problems, _ = suite_problems(tmp_path / "nowhere")
    assert [p.message for p in problems] == ["no such suite file or folder"]


def _project(folder: Path, config: str) -> Path:
    one_case = "cases:\n  - id: a\n    question: How many?\n    gold_sql: SELECT 1\n"
    _suite(folder, cases=one_case, suite=SUITE.split("defaults")[0])
    (folder / "sqlcanary.yml").write_text(config, encoding="utf-8")
    return folder / "sqlcanary.yml"


def test_a_config_with_errors_still_has_its_suite_and_agent_checked(tmp_path: Path) -> None:
    path = _project(tmp_path, "suite: .\njbos: 2\nagent: comand:python3 agent.py\n")
    result = validate(path)
    said = [(p.line, p.key, p.message) for p in result.errors]
    assert said[0][:2] == (2, "jbos") and "did you mean `jobs`?" in said[0][2]
    assert said[1][:2] == (3, "agent.spec") and "did you mean `command`?" in said[1][2]
    assert len(said) == 2 and result.cases == 1


@pytest.mark.parametrize(
    ("agent", "fragment"),
    [
        ("command:python3 missing.py", "no file 'missing.py'"),
        ("command:./run-agent.sh", "no file './run-agent.sh'"),
        ("command:no-such-program-xyz", "cannot start 'no-such-program-xyz'"),
        ("python:agent.py:answer", "no Python file 'agent.py'"),
        ("predictions:preds.jsonl", "no file 'preds.jsonl'"),
        ("command", "needs an argument"),
    ],
)
def test_the_agent_spec_is_checked_without_starting_it(tmp_path: Path, agent: str, fragment: str) -> None:
    result = validate(_project(tmp_path, f"suite: .\nagent:\n  spec: {agent}\n"))
    assert [(p.line, p.key) for p in result.errors] == [(3, "agent.spec")]
    assert fragment in result.errors[0].message


def test_kb_problems(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    (kb / "metrics").mkdir(parents=True)
    (kb / "metrics" / "gmv.yaml").write_text("name: gmv\ncolour: red\n", encoding="utf-8")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "bad.yaml").write_text("a: [unclosed\n", encoding="utf-8")
    (tmp_path / "notes" / "data.json").write_text("{}\n", encoding="utf-8")
    config = (
        "suite: .\nkb:\n  paths:\n    - kb/**/*.yaml\n    - notes/*.yaml\n    - nothere/*.md\n    - notes/*\n"
    )
    result = validate(_project(tmp_path, config))
    by_key: dict[str, list[str]] = {}
    for p in result.problems:
        by_key.setdefault(p.key or Path(p.path).relative_to(tmp_path).as_posix(), []).append(p.message)
    assert "folder nothere/, which does not exist" in by_key["kb.paths[2]"][0]
    assert "the repair can never edit" in by_key["kb.paths"][0] and "data.json" in by_key["kb.paths"][0]
    assert any("unparsable YAML" in m for m in by_key["notes/bad.yaml"])
    assert any("missing: every KB needs this file" in m for k, ms in by_key.items() for m in ms if "kb/" in k)
    assert any("description" in m for m in by_key["kb/metrics/gmv.yaml"])


def test_the_shop_and_its_kb_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SHOP)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "valid:" in out and "(84 cases)" in out and "warning" not in out


def test_validate_exits_2_on_a_suite_error_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _project(tmp_path, "suite: .\n")
    (tmp_path / "cases" / "all.yml").write_text(
        "cases:\n  - id: a\n    question: How many?\n    gold_sqll: x\n"
    )
    assert main(["validate", str(path)]) == EXIT_BAD_INPUT
    assert "cases[0].gold_sqll: unknown key in a case; did you mean `gold_sql`?" in capsys.readouterr().out
