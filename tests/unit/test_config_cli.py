"""sqlcanary.yml loading and discovery, and the exit codes of `bot.cli.main` for what fails before a database is
needed (no database: every command here stops before provisioning)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Imported at collection on purpose: Progress binds `stream=sys.stderr` when bot.report.console is first
# imported; first imported inside a test under capsys, it would keep that closed stream for the session.
import bot.commands.run  # noqa: F401
from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK, ConfigError, SqlcanaryError
from bot.base.settings import Settings
from bot.cli import main
from bot.config.model import AgentConfig, Config, database_url, find_config, load_config

SUITES = Path(__file__).resolve().parents[1] / "fixtures" / "suites"
GOOD_SUITE = SUITES / "single" / "single.yml"


def _config(folder: Path, text: str, name: str = "sqlcanary.yml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# --- load_config -----------------------------------------------------------------------------------------------


def test_full_config_loads_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    path = _config(
        tmp_path / "proj",
        "suite: benchmarks/shop\nagent:\n  spec: command:./agent.sh\n  timeout: 30\n"
        "  persistent: true\n  options: {model: small}\njobs: 4\nrow_cap: 100\nstatement_timeout: 10s\n"
        "preset: bird\nout: results/run.json\npostgres: embedded\nkb: {paths: [kb]}\n",
    )
    config = load_config(path)
    assert config.agent == AgentConfig(
        spec="command:./agent.sh", timeout=30, persistent=True, options={"model": "small"}
    )
    assert (config.jobs, config.row_cap, config.statement_timeout, config.preset) == (4, 100, "10s", "bird")
    assert config.path(config.suite or "") == (tmp_path / "proj").resolve() / "benchmarks" / "shop"
    assert config.path("/abs/x") == Path("/abs/x")
    assert config.kb.paths == ("kb",)


def test_an_agent_string_is_an_agent_spec(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "agent: python:agent.py:answer\n"))
    assert config.agent == AgentConfig(spec="python:agent.py:answer")
    assert (config.agent.timeout, config.agent.persistent) == (120.0, False)


def test_an_empty_config_is_the_defaults(tmp_path: Path) -> None:
    path = _config(tmp_path, "")
    config = load_config(path)
    assert config == Config(base_dir=str(tmp_path.resolve()), config_file=str(path.resolve()))


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("suite: s\n\nagnet: gold\n", 3, "agnet"),  # unknown key
        ("suite: s\njobs: many\n", 2, "jobs"),  # wrong type
        ("jobs: 0\n", 1, "jobs"),  # out of range
        ("postgres: podman\n", 1, "postgres"),
        ("agent:\n  spec: gold\n  timeout: -1\n", None, "agent.timeout"),  # nested: the path is named
        ("agent: [gold]\n", 1, "agent"),
        ("- a list\n", 1, "must be a mapping"),
        ("suite: [unclosed\n", None, "unparsable YAML"),
    ],
)
def test_config_errors_name_the_file_and_line(
    tmp_path: Path, text: str, line: int | None, fragment: str
) -> None:
    path = _config(tmp_path, text)
    # SqlcanaryError: unparsable YAML comes from the shared YAML reader as a CaseFileError
    with pytest.raises(SqlcanaryError) as info:
        load_config(path)
    err = info.value
    assert err.exit_code == EXIT_BAD_INPUT
    assert Path(err.path or "") == path
    if line is not None:
        assert err.line == line and f"sqlcanary.yml:{line}" in str(err)
    else:
        assert err.line is not None
    assert fragment in str(err)


def test_base_dir_is_not_a_config_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, "suite: s\nbase_dir: /etc\n"))
    assert info.value.line == 2 and "multiple values" not in str(info.value)


def test_unknown_preset_in_the_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, "preset: bird2\n"))
    assert info.value.line == 1


def test_the_dsn_is_not_in_the_repr(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "dsn: postgresql://u:hunter2@db/x\n"))
    assert config.dsn == "postgresql://u:hunter2@db/x"
    assert "hunter2" not in repr(config)


def test_database_url_order() -> None:
    config = Config(dsn="from-config")
    from_env = Settings.from_environ({"DATABASE_URL": "from-env"}).database_url
    assert database_url("from-cli", config, from_env) == "from-cli"
    assert database_url(None, config, from_env) == "from-env"
    assert database_url(None, config, Settings.from_environ({}).database_url) == "from-config"
    assert database_url(None, Config(), None) is None


# --- find_config -----------------------------------------------------------------------------------------------


def test_find_config_explicit_path_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _config(tmp_path, "jobs: 1\n")
    explicit = _config(tmp_path / "elsewhere", "jobs: 7\n", name="ci.yml")
    assert find_config(str(explicit), None).jobs == 7


def test_find_config_explicit_path_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no such config file"):
        find_config("missing.yml", None)


def test_find_config_prefers_the_suite_folder_over_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path / "work", "jobs: 3\n")
    _config(tmp_path / "suite", "jobs: 5\n")
    monkeypatch.chdir(tmp_path / "work")
    config = find_config(None, str(tmp_path / "suite"))
    assert config.jobs == 5
    assert Path(config.base_dir) == (tmp_path / "suite").resolve()


def test_find_config_falls_back_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "suite").mkdir()
    _config(tmp_path / "work", "jobs: 3\n", name="sqlcanary.yaml")
    monkeypatch.chdir(tmp_path / "work")
    assert find_config(None, str(tmp_path / "suite")).jobs == 3
    assert find_config(None, None).jobs == 3


def test_find_config_prefers_yml_over_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, "jobs: 1\n")
    _config(tmp_path, "jobs: 2\n", name="sqlcanary.yaml")
    monkeypatch.chdir(tmp_path)
    assert find_config(None, None).jobs == 1


def test_find_config_ignores_a_suite_file_s_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path / "work", "jobs: 3\n")
    _config(tmp_path / "suite", "jobs: 5\n")
    (tmp_path / "suite" / "suite.yml").write_text("databases: {}\n")
    monkeypatch.chdir(tmp_path / "work")
    # a single-file suite has no suite folder to look in
    assert find_config(None, str(tmp_path / "suite" / "suite.yml")).jobs == 3


def test_find_config_without_any_file_is_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = find_config(None, None)
    assert config == Config(base_dir=str(Path.cwd()))


# --- bot.cli.main ----------------------------------------------------------------------------------------------


@pytest.fixture
def in_empty_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No sqlcanary.yml around, no DATABASE_URL: nothing from the environment leaks into the command."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return tmp_path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("sqlcanary ")


def test_no_command_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == EXIT_BAD_INPUT
    assert "usage" in capsys.readouterr().err


def test_help_is_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == EXIT_OK
    assert "--agent" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--bogus"],
        ["frobnicate"],
        ["run", "--jobs", "many"],
        ["run", "--preset", "bird2"],
        ["run", "--no-such"],
        ["rescore"],
    ],
)
def test_bad_options_are_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_BAD_INPUT
    assert "error" in capsys.readouterr().err


def test_run_on_a_missing_suite_names_the_path(
    in_empty_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = in_empty_dir / "no-such-suite"
    assert main(["run", str(missing), "-q"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert str(missing) in err and "no such suite" in err
    assert "internal error" not in err


def test_run_without_a_suite_says_how_to_give_one(
    in_empty_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "-q"]) == EXIT_BAD_INPUT
    assert "no suite given" in capsys.readouterr().err


def test_run_on_a_bad_suite_names_file_and_line(
    in_empty_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(SUITES / "bad_unknown_key"), "-q"]) == EXIT_BAD_INPUT
    assert "suite.yml:7 (case typo): unknown key 'tag'" in capsys.readouterr().err


def test_run_with_a_bad_config_names_it(in_empty_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(in_empty_dir, "jobz: 2\n")
    assert main(["run", str(GOOD_SUITE), "-q"]) == EXIT_BAD_INPUT
    assert "sqlcanary.yml:1: jobz" in capsys.readouterr().err


def test_run_with_an_unknown_agent_kind(in_empty_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(GOOD_SUITE), "--agent", "sql:gpt", "-q"]) == EXIT_BAD_INPUT
    assert "unknown agent 'sql:gpt'" in capsys.readouterr().err


def test_run_with_filters_that_match_nothing(in_empty_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(GOOD_SUITE), "--tags", "nothing", "-q"]) == EXIT_BAD_INPUT
    assert "no case matches" in capsys.readouterr().err


def test_run_with_a_bad_statement_timeout(in_empty_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(GOOD_SUITE), "--statement-timeout", "soon", "-q"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "not a duration: 'soon'" in err


def test_a_bad_statement_timeout_option_is_not_given_a_line(
    in_empty_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", str(GOOD_SUITE), "--statement-timeout", "soon", "-q"])
    assert ":0:" not in capsys.readouterr().err


def test_rescore_of_a_missing_run_file(in_empty_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rescore", str(in_empty_dir / "none.json"), str(GOOD_SUITE), "-q"]) == EXIT_BAD_INPUT
    assert "none.json: no such file" in capsys.readouterr().err


def test_progress_writes_to_the_stderr_of_the_moment(capsys: pytest.CaptureFixture[str]) -> None:
    from bot.report.console import Progress

    assert Progress(1).stream is sys.stderr
