"""sqlcanary.yml's errors in our words (bot.config.problems), every one at once, and where the config is found:
from the current folder upward to the repository root, as pytest and dbt look for theirs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK, ConfigError
from bot.cli import main
from bot.config.model import Config, config_near, find_config, load_config, read_config

SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "single" / "single.yml"
KNOWN_TOP = "agent, cache, dsn, gate, jobs, kb, llm, out, perturb, postgres, preset, row_cap, statement_timeout, suite"

THREE_TYPOS = f"""suite: {SUITE}
agnet: gold
jobs: 2
llm:
  modle: qwen2.5-coder
gate:
  max_regresions: 1
"""


def _write(folder: Path, text: str, name: str = "sqlcanary.yml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def test_three_typos_are_reported_at_once_with_lines_and_suggestions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, THREE_TYPOS)
    assert main(["validate", str(path)]) == EXIT_BAD_INPUT
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith(str(path))]
    assert len(lines) == 3, out
    assert lines[0].startswith(
        f"{path}:2: agnet: unknown key; did you mean `agent`? (known keys: {KNOWN_TOP})"
    )
    assert lines[1].startswith(f"{path}:5: llm.modle: unknown key in `llm`; did you mean `model`?")
    assert "(known keys in `llm`: api_key_env," in lines[1]
    assert lines[2].startswith(f"{path}:7: gate.max_regresions: unknown key in `gate`; did you mean")
    assert "`max_regressions`?" in lines[2]
    assert "Extra inputs are not permitted" not in out
    assert out.splitlines()[-1].startswith("sqlcanary validate: 3 errors:")


def test_load_config_says_the_first_problem_in_our_words_and_counts_the_rest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, THREE_TYPOS))
    err = info.value
    assert err.line == 2
    assert "sqlcanary.yml:2: agnet: unknown key; did you mean `agent`?" in str(err)
    assert "(and 2 more: `sqlcanary validate` lists them all)" in str(err)
    assert "Extra inputs" not in str(err)


@pytest.mark.parametrize(
    ("text", "line", "key", "fragment"),
    [
        ("agent:\n  spec: gold\n  timeot: 3\n", 3, "agent.timeot", "did you mean `timeout`?"),
        ("agent:\n  spec: gold\n  timeout: -1\n", 3, "agent.timeout", "greater than 0"),
        ("llm:\n  budget:\n    max_cals: 3\n", 3, "llm.budget.max_cals", "did you mean `max_calls`?"),
        ("kb:\n  path: [kb]\n", 2, "kb.path", "did you mean `paths`?"),
        ("jobs: many\n", 1, "jobs", "(got 'many')"),
        ("zzz: 1\n", 1, "zzz", "unknown key (known keys:"),  # nothing close: no guess
        ("suite: s\nbase_dir: /etc\n", 2, "base_dir", "paths are relative to this file"),
    ],
)
def test_each_problem_names_its_line_and_key_path(
    tmp_path: Path, text: str, line: int, key: str, fragment: str
) -> None:
    config, problems = read_config(_write(tmp_path, text))
    assert config is None and len(problems) == 1
    problem = problems[0]
    assert (problem.line, problem.key) == (line, key)
    assert fragment in problem.message
    assert str(problem).startswith(f"{tmp_path / 'sqlcanary.yml'}:{line}: {key}: ")


def test_a_valid_config_has_no_problem(tmp_path: Path) -> None:
    config, problems = read_config(_write(tmp_path, "agent: {spec: gold, env: X}\njobs: 2\n"))
    assert problems == [] and config is not None and config.agent is not None
    assert config.agent.env == ("X",)


# --- where the config is found --------------------------------------------------------------------------------


def test_the_config_is_found_from_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    found = _write(tmp_path / "repo", "jobs: 3\n")
    deep = tmp_path / "repo" / "cases" / "more"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert config_near(deep) == found
    with caplog.at_level(logging.INFO, logger="sqlcanary.config"):
        config = find_config(None, None)
    assert config.jobs == 3 and Path(config.base_dir) == (tmp_path / "repo").resolve()
    assert f"config: {found}" in caplog.text


def test_the_search_stops_at_the_repository_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "jobs: 3\n")  # above the repository: not this project's
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "repo" / "sub")
    assert config_near(tmp_path / "repo" / "sub") is None
    assert find_config(None, None) == Config(base_dir=str(Path.cwd()))


def test_the_suite_folder_s_config_still_wins_over_the_one_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "jobs: 3\n")
    _write(tmp_path / "suite", "jobs: 5\n")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert find_config(None, str(tmp_path / "suite")).jobs == 5
    assert find_config(None, None).jobs == 3


def test_validate_finds_the_config_upward_and_says_so_when_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    _write(tmp_path / "repo", f"suite: {SUITE}\n")
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo" / "a" / "b")
    assert main(["validate"]) == EXIT_OK
    assert "valid: ../../sqlcanary.yml" in capsys.readouterr().out
    (tmp_path / "empty" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "empty")
    assert main(["validate"]) == EXIT_BAD_INPUT
    assert "no sqlcanary.yml in" in capsys.readouterr().err


def test_validate_takes_the_config_s_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "proj", f"suite: {SUITE}\n")
    assert main(["validate", str(tmp_path / "proj")]) == EXIT_OK
    assert main(["validate", str(tmp_path / "nothing-here.yml")]) == EXIT_BAD_INPUT
    assert "no such config file" in capsys.readouterr().err


def test_paths_are_shown_relative_only_inside_or_above_the_current_folder(tmp_path: Path) -> None:
    """The same output wherever the current folder is: a sibling tree is named absolutely, never `../../x`."""
    from bot.commands.validate import _shown

    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    assert _shown(project / "sqlcanary.yml", project / "sub") == "../sqlcanary.yml"
    assert _shown(project / "sub" / "cases.yml", project) == "sub/cases.yml"
    elsewhere = tmp_path / "other" / "sqlcanary.yml"
    assert _shown(elsewhere, project / "sub") == str(elsewhere.resolve())
