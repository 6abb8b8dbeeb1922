"""benchmarks/shop/README.md's repair walkthrough, run as the README writes it: its commands are read from the
README and run one by one with bash, in a git copy of the repository's shop folder, with no key and no model
(the shipped replay provider answers). PostgreSQL is the test server (DATABASE_URL), as a user's would be."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
README = SHOP / "README.md"
HEADING = "## Repair it, with no key and no model"
VIET_NAM = "shop-market-gmv-viet-nam-dec"


def walkthrough_commands(text: str) -> list[str]:
    """The command lines of the first ```bash block after HEADING."""
    at = text.index(HEADING)
    block = re.search(r"```bash\n(.*?)```", text[at:], re.S)
    assert block, f"{README}: no ```bash block under {HEADING!r}"
    return [
        line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def git(root: Path, *args: str) -> None:
    ident = ["-c", "user.name=walkthrough", "-c", "user.email=walkthrough@example.invalid"]
    subprocess.run(["git", *ident, *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding a copy of benchmarks/shop at the same path, committed."""
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", ".sqlcanary", "sqlcanary-results")
    shutil.copytree(SHOP, root / "benchmarks" / "shop", ignore=ignore)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the shop example")
    return root


def shell_env(pg_dsn: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SQLCANARY_LLM_", "OPENAI_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this venv's sqlcanary
    env["DATABASE_URL"] = pg_dsn
    env["NO_COLOR"] = "1"
    return env


def sh(command: str, root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_readme_repair_walkthrough_runs_as_written(repo, pg_dsn):
    commands = walkthrough_commands(README.read_text(encoding="utf-8"))
    assert len(commands) == 6, commands
    assert "replay:benchmarks/shop/llm/repair-walkthrough.yml" in commands[2]
    env = shell_env(pg_dsn)
    outputs = []
    for command in commands:
        done = sh(command, repo, env)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout + done.stderr)

    breaks = yaml.safe_load((SHOP / "regressions" / "missing_tz_filter.yml").read_text())["breaks"]
    head = json.loads((repo / "sqlcanary-results" / "head.json").read_text())
    failed = {c["id"] for c in head["cases"] if c["status"] != "passed"}
    assert failed == {*breaks, VIET_NAM}  # what the README says: 68 of 84 pass
    assert len(head["cases"]) - len(failed) == 68

    assert "pass rate 81.0% -> 100.0%" in outputs[2]
    outcome = json.loads((repo / "sqlcanary-results" / "repair" / "outcome.json").read_text())
    assert sorted(outcome["files_changed"]) == ["kb/dimensions.yaml", "kb/metrics/dau.yaml"]
    assert outcome["llm"]["requests"] == 3  # two plans and the review, nothing else asked

    assert "+  - tz_type = 'local'" in outputs[3] and "+        aliases: [Vietnam, Viet Nam]" in outputs[3]
    assert "kb/dimensions.yaml" in outputs[4] and "dau.yaml" not in outputs[4]
    for path in ("kb/metrics/dau.yaml", "kb/dimensions.yaml"):  # the last command put the shipped KB back
        assert (repo / "benchmarks" / "shop" / path).read_text() == (SHOP / path).read_text()


def test_a_request_the_replay_file_has_no_reply_for_stops_repair_with_exit_2(repo, pg_dsn, tmp_path):
    """The README's first two commands, then a replay file with no repair replies: exit 2 naming the request,
    and the KB exactly as the regression left it."""
    commands = walkthrough_commands(README.read_text(encoding="utf-8"))
    env = shell_env(pg_dsn)
    for command in commands[:2]:
        assert sh(command, repo, env).returncode == 0
    dau = repo / "benchmarks" / "shop" / "kb" / "metrics" / "dau.yaml"
    broken = dau.read_text()
    replies = tmp_path / "only-critique.yml"
    replies.write_text("replies:\n  - kind: critique\n    reply: {status: perfect, actions: []}\n")
    env["SQLCANARY_LLM_BASE_URL"] = f"replay:{replies}"
    done = sh("sqlcanary repair sqlcanary-results/head.json", repo, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(r"no reply matches this request \(kind repair, case [\w-]+, attempt 1\)", done.stderr)
    assert f"replay {replies}" in done.stderr
    assert dau.read_text() == broken
