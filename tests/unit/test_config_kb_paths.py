"""`kb.paths` that match a file the repair can never edit (data such as JSON, code, files under .github/) fail
when the config is loaded: exit 2 naming the glob and the file, before any LLM call is paid for."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot.commands.run  # noqa: F401  (see test_config_cli: Progress binds stderr at first import)
from bot.base.errors import EXIT_BAD_INPUT, ConfigError
from bot.cli import main
from bot.config.model import Config, KBConfig, check_kb_paths, load_config
from bot.kb.files import KB_SUFFIXES, KBFiles

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "fixtures" / "suites" / "single" / "single.yml"


def _project(root: Path, config: str, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    path = root / "sqlcanary.yml"
    path.write_text(config, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("glob", "bad"),
    [
        ("kb/**", "kb/answers.json"),
        ("kb/*", "kb/helper.py"),
        ("kb/**/*", "kb/sub/run.sh"),
        ("**/*.md", ".github/PULL_REQUEST_TEMPLATE.md"),
    ],
)
def test_a_glob_matching_a_file_repair_cannot_edit_names_both(tmp_path: Path, glob: str, bad: str) -> None:
    path = _project(
        tmp_path,
        f"kb:\n  paths:\n    - 'kb/**/*.yaml'\n    - '{glob}'\n",
        {"kb/metrics/gmv.yaml": "name: gmv\n", bad: "{}\n"},
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert err.value.exit_code == EXIT_BAD_INPUT
    assert repr(glob) in text and bad in text and "never edit" in text
    assert text.startswith(f"{path.resolve()}:4:")  # the glob's own line


def test_the_cli_exits_2_naming_the_glob_and_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # should the check not hold, the run's results land here
    path = _project(tmp_path, "kb:\n  paths: ['data/**']\n", {"data/deep/answers.json": "{}"})
    out = tmp_path / "out.json"
    assert main(["run", str(SUITE), "--config", str(path), "--out", str(out), "-q"]) == EXIT_BAD_INPUT
    assert not out.exists()
    err = capsys.readouterr().err
    assert "'data/**'" in err and "data/deep/answers.json" in err and "internal error" not in err


def test_kb_globs_matching_only_kb_files_load(tmp_path: Path) -> None:
    files = {f"kb/x{suffix}": "x\n" for suffix in KB_SUFFIXES}
    path = _project(tmp_path, "kb:\n  paths: ['kb/**/*.yaml', 'kb/*', 'missing/**']\n", files)
    assert load_config(path).kb.paths == ("kb/**/*.yaml", "kb/*", "missing/**")


def test_the_shop_example_loads() -> None:
    config = load_config(REPO / "benchmarks" / "shop" / "sqlcanary.yml")
    assert KBFiles.from_config(config).files()  # and the repair loop sees its KB


def test_only_existing_matches_count_and_absolute_globs_are_left_to_the_loop(tmp_path: Path) -> None:
    check_kb_paths(Config(base_dir=str(tmp_path), kb=KBConfig(paths=("kb/*.json", "/etc/*", "../x/*"))))


def test_the_rule_is_the_repair_loops(tmp_path: Path) -> None:
    """What the config refuses is what KBFiles refuses to write."""
    kb = KBFiles(root=tmp_path, globs=("**",))
    assert kb.allowed("kb/answers.json") is not None and kb.allowed("kb/a.yaml") is None
