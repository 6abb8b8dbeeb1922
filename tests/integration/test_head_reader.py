"""The head's files are read apart (bot.check.head_reader): by a child that holds no secret and, as root, runs
as an unprivileged user of its own; the check's process takes what it printed as bounded, validated data, sets
the config's folder itself, and says what was wrong in a head file by its path and line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bot.base.errors import CaseFileError, ConfigError
from bot.base.results import read_run
from bot.check.head_reader import HeadFiles, ReadRequest, parse_output, read_head
from bot.cli import main
from tests.support.attribution_repo import FOLDER, base_repo
from tests.support.tinyrepo import git

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SECRETS = {
    "GITHUB_TOKEN": "ghs_never",
    "OPENAI_API_KEY": "sk-never",
    "DATABASE_URL": "postgresql://admin@x/y",
}


def tree(tmp_path: Path, config: str = "suite: .\n") -> Path:
    head = tmp_path / "head"
    (head / "cases").mkdir(parents=True)
    (head / "sqlcanary.yml").write_text(config)
    (head / "suite.yml").write_text("name: tiny\ndatabases:\n  shop: []\n")
    (head / "cases" / "one.yml").write_text(
        "cases:\n  - id: one\n    question: how many?\n    gold_sql: SELECT 1\n    db: shop\n"
    )
    return head


def read(head: Path, suites: tuple[str, ...] = ()) -> HeadFiles:
    req = ReadRequest(config_file=str(head / "sqlcanary.yml"), suites=suites)
    return read_head(req, head, {**SECRETS, "PATH": os.environ["PATH"]}, say=print)


def test_the_head_is_read_by_a_child_as_an_unprivileged_user(tmp_path: Path) -> None:
    head = tree(tmp_path)
    files = read(head)
    config = files.own_config(head / "sqlcanary.yml")
    assert config.suite == "." and config.base_dir == str(head.resolve())
    assert [c.id for c in files.suite(head).cases] == ["one"]  # the config's own suite, read too
    if AS_ROOT:
        # the sandbox's user: a bug of the parser runs with none of root's rights
        assert files.uid not in (None, 0)
    else:
        assert files.uid == os.geteuid()


def test_a_broken_head_config_or_suite_is_named_by_its_file_and_line(tmp_path: Path) -> None:
    head = tree(tmp_path, "suite: .\nsuit: typo\n")
    files = read(head, suites=(str(head),))
    with pytest.raises(ConfigError) as exc:
        files.own_config(head / "sqlcanary.yml")
    assert str(exc.value).startswith(f"{head / 'sqlcanary.yml'}:2")
    (head / "cases" / "one.yml").write_text("cases:\n  - id: one\n    question: how many?\n    dbb: shop\n")
    files = read(head, suites=(str(head),))
    with pytest.raises(CaseFileError) as bad:
        files.suite(head)
    assert f"{head / 'cases' / 'one.yml'}:" in str(bad.value), bad.value
    assert bad.value.case_id == "one"  # the error still names the case
    with pytest.raises(CaseFileError, match="no such suite"):
        files.suite(head / "nowhere")


def test_what_the_reader_prints_is_bounded_validated_data() -> None:
    with pytest.raises(ConfigError, match="not what sqlcanary reads"):
        parse_output(b"not json", 0, "")
    with pytest.raises(ConfigError, match="not what sqlcanary reads"):
        parse_output(b'{"config": null, "gate_passed": true}', 0, "")  # no key it does not know
    with pytest.raises(ConfigError, match="exceed 10 bytes"):
        parse_output(b"{}" + b" " * 9, 0, "", limit=10)
    with pytest.raises(ConfigError, match="exit code 2"):
        parse_output(b"", 2, "a message")
    with pytest.raises(RuntimeError, match="exit code 3"):  # a crash of ours is a bug (exit 3), not the PR's
        parse_output(b"", 3, "Traceback")


def test_a_reader_cannot_move_the_configs_folder(tmp_path: Path) -> None:
    file = tmp_path / "sqlcanary.yml"
    files = HeadFiles(config={"suite": "cases", "base_dir": "/etc", "config_file": "/etc/passwd"})
    config = files.own_config(file)
    assert (config.base_dir, config.config_file) == (str(tmp_path.resolve()), str(file.resolve()))


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_check_of_a_head_with_a_broken_config_exits_2_naming_it(
    tmp_path: Path, monkeypatch, capsys, pg_dsn: str
) -> None:
    repo = base_repo(tmp_path)
    config = repo / FOLDER / "sqlcanary.yml"
    config.write_text(config.read_text() + "gate: {max_regressions: [\n")
    git(repo, "commit", "-qam", "a broken config")
    git(repo, "checkout", "-q", "main")
    monkeypatch.chdir(repo / FOLDER)
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    argv = ["check", "--base", "main", "--head", "pr", "--dsn", pg_dsn, "--out", str(tmp_path / "out"), "-q"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{FOLDER}/sqlcanary.yml:" in err, err


def test_the_heads_run_takes_its_suite_as_read_and_parses_none_of_its_yaml(
    tmp_path: Path, pg_dsn: str
) -> None:
    head = tree(tmp_path)
    data = tmp_path / "suite.json"
    data.write_text(read(head, suites=(str(head),)).suites[str(head.resolve())].model_dump_json())
    (head / "cases" / "one.yml").write_text("cases: [unparsable\n")  # what a run that parses it would trip on
    out = tmp_path / "run.json"
    argv = [
        "run",
        str(head),
        "--suite-data",
        str(data),
        "--agent",
        "gold",
        "--dsn",
        pg_dsn,
        "--out",
        str(out),
    ]
    assert main([*argv, "-q"]) == 0
    assert [(c.id, c.status) for c in read_run(out).cases] == [("one", "passed")]
    assert main(["run", str(head), "--agent", "gold", "--dsn", pg_dsn, "--out", str(out), "-q"]) == 2
