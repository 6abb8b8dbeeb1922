"""`sqlcanary init [DIR]` (bot.config.scaffold): the files it writes, where the workflow goes, that it never
overwrites (one file there and nothing is written), that the files ship in the wheel, that the example agent
answers with `used`, and that the workflow stays the copy of examples/workflows/sqlcanary-pr.yml it claims to be.
That the project then runs green on a real PostgreSQL: tests/integration/test_init_run.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK, ConfigError
from bot.cli import main
from bot.config.model import load_config
from bot.config.scaffold import (
    CONFIG_PLACEHOLDER,
    GITIGNORE,
    PROJECT_FILES,
    WORKFLOW_FILE,
    WORKFLOW_TEMPLATE,
    gitignore_hint,
    template_text,
    write_init,
)
from bot.config.schema import SCHEMA_URL

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "templates"
EXAMPLE_WORKFLOW = REPO / "examples" / "workflows" / "sqlcanary-pr.yml"
EVERY_FILE = sorted([target for _, target in PROJECT_FILES] + [WORKFLOW_FILE, ".gitignore"])


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_init_writes_the_project_and_the_workflow(tmp_path: Path) -> None:
    written = write_init(tmp_path / "new")  # a folder that does not exist yet is made
    assert sorted(p.relative_to(tmp_path / "new").as_posix() for p in written) == EVERY_FILE
    assert _files(tmp_path / "new") == set(EVERY_FILE)
    assert os.access(tmp_path / "new" / "agent.py", os.X_OK)
    config_text = (tmp_path / "new" / "sqlcanary.yml").read_text(encoding="utf-8")
    assert config_text.splitlines()[0] == f"# yaml-language-server: $schema={SCHEMA_URL}"
    config = load_config(tmp_path / "new" / "sqlcanary.yml")
    assert config.agent is not None and config.agent.spec == "command:python3 agent.py"
    assert config.kb.paths == ("kb/**/*.sql",)
    workflow = yaml.safe_load((tmp_path / "new" / WORKFLOW_FILE).read_text(encoding="utf-8"))
    step = next(s for s in workflow["jobs"]["check"]["steps"] if s.get("id") == "canary")
    assert step["with"] == {"config": "sqlcanary.yml"}


def test_in_a_repository_the_workflow_goes_to_its_root_and_names_the_config(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write_init(tmp_path / "evals")
    assert _files(tmp_path / "evals") == {t for _, t in PROJECT_FILES} | {".gitignore"}
    workflow = yaml.safe_load((tmp_path / WORKFLOW_FILE).read_text(encoding="utf-8"))
    step = next(s for s in workflow["jobs"]["check"]["steps"] if s.get("id") == "canary")
    assert step["with"] == {"config": "evals/sqlcanary.yml"}


@pytest.mark.parametrize("existing", ["sqlcanary.yml", "kb/queries/revenue_2025.sql", WORKFLOW_FILE])
def test_init_refuses_when_any_file_exists_and_writes_nothing(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("mine\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        write_init(tmp_path)
    assert info.value.path == str(tmp_path / existing)
    assert "already exists" in str(info.value) and "wrote nothing" in str(info.value)
    assert _files(tmp_path) == {existing}
    assert (tmp_path / existing).read_text(encoding="utf-8") == "mine\n"


def test_a_second_init_exits_2_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "wrote sqlcanary.yml" in out and "sqlcanary run" in out
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert main(["init", "."]) == EXIT_BAD_INPUT
    assert f"{tmp_path / 'sqlcanary.yml'}: already exists" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def _ask(agent: Path, question: str) -> dict:
    request = {"id": "x", "question": question, "db": "shop", "category": "query", "tags": [], "options": {}}
    done = subprocess.run(
        [sys.executable, str(agent)], input=json.dumps(request), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_example_agent_answers_from_the_kb_and_says_which_lines_it_used(tmp_path: Path) -> None:
    write_init(tmp_path)
    reply = _ask(tmp_path / "agent.py", "Total amount of the orders placed in 2025?")
    assert reply["used"] == ["kb/queries/revenue_2025.sql:1-4"]
    assert reply["sql"].startswith("SELECT sum(amount) AS revenue") and "--" not in reply["sql"]
    assert _ask(tmp_path / "agent.py", "Zebra?") == {"error": "no query in kb/queries/ matches this question"}


def test_the_init_files_ship_in_the_wheel() -> None:
    """Every file under templates/init is matched by a package-data glob of bot.templates (setuptools' globs
    are relative to the package folder and take `**`)."""
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {p for g in globs["bot.templates"] for p in TEMPLATES.glob(g) if p.is_file()}
    wanted = {p for p in (TEMPLATES / "init").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert wanted and wanted <= shipped
    needed = {name for name, _ in PROJECT_FILES} | {WORKFLOW_TEMPLATE, GITIGNORE[0]}
    assert {p.relative_to(TEMPLATES / "init").as_posix() for p in wanted} == needed


def test_init_reads_its_files_from_the_wheel_layout(tmp_path: Path) -> None:
    """Installed, templates/ is the namespace package bot/templates (no source tree beside bot/): init reads its
    files through importlib.resources. The layout of the wheel, built by copying, in a child Python."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "bot", site / "bot", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(TEMPLATES, site / "bot" / "templates", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "proj").mkdir()
    code = "import bot.config.scaffold as s, pathlib; print(s.__file__); s.write_init(pathlib.Path('.'))"
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path / "proj", env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(site / "bot" / "config" / "scaffold.py")
    assert _files(tmp_path / "proj") == set(EVERY_FILE)


def _body(text: str) -> list[str]:
    """A workflow from its first line that is not a comment (the header says where the copy comes from)."""
    lines = text.splitlines()
    return lines[next(i for i, line in enumerate(lines) if not line.startswith("#")) :]


@pytest.mark.skipif(not EXAMPLE_WORKFLOW.is_file(), reason="examples/workflows/sqlcanary-pr.yml is absent")
def test_the_workflow_is_the_example_with_the_config_named() -> None:
    ours = _body(template_text(WORKFLOW_TEMPLATE))
    example = _body(EXAMPLE_WORKFLOW.read_text(encoding="utf-8"))
    changed = [(a, b) for a, b in zip(ours, example, strict=True) if a != b]
    assert len(changed) == 1, "templates/init/workflow.yml drifted from examples/workflows/sqlcanary-pr.yml"
    assert CONFIG_PLACEHOLDER in changed[0][0] and "suite:" in changed[0][1]


def test_the_written_workflow_passes_actionlint(tmp_path: Path) -> None:
    tool = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("actionlint is not installed; CI is set, so this may not skip", pytrace=False)
        pytest.skip("`actionlint` is not installed (pip install -e '.[test]' installs it)")
    write_init(tmp_path)
    done = subprocess.run(
        [tool, "-no-color", str(tmp_path / WORKFLOW_FILE)], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_init_ignores_its_output_and_keeps_a_gitignore_of_your_own(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    write_init(fresh)
    ignored = (fresh / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "sqlcanary-results/" in ignored and ".sqlcanary/" in ignored
    assert gitignore_hint(fresh) is None

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / ".gitignore").write_text("*.log\nsqlcanary-results/\n", encoding="utf-8")
    written = write_init(mine)  # a .gitignore is no reason to refuse
    assert mine / ".gitignore" not in written
    assert (mine / ".gitignore").read_text(encoding="utf-8") == "*.log\nsqlcanary-results/\n"
    assert (
        gitignore_hint(mine)
        == f"kept your {mine / '.gitignore'}: add .sqlcanary/ to it (sqlcanary's results and caches)"
    )


def test_git_ignores_what_a_run_of_the_new_project_writes(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write_init(tmp_path)
    for output in ("sqlcanary-results/run.json", ".sqlcanary/cache/runs/x.json"):
        (tmp_path / output).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / output).write_text("{}", encoding="utf-8")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    assert "sqlcanary-results" not in status and ".sqlcanary/" not in status
    assert "sqlcanary.yml" in status  # the project itself is not ignored
