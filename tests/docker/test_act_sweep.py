"""examples/workflows/sqlcanary-sweep.yml through act and the local Docker engine: a `workflow_dispatch` with a grid
of two settings and two shards plans four matrix jobs, each runs its setting's shard of the shop suite
(benchmarks/shop, the repository's root here: the action's default config), and the report job merges the shards
per setting into one table.

The workflow act runs is the example with one line changed (act_local.example asserts it occurs once): `name:`,
made unique per session, since act names the jobs' containers after it (test_act.py). Everything else, the `plan`
job's output, the `fromJSON` matrix, `toJSON(matrix)` as input `setting`, the legs' artifact names
(`sweep-${{ matrix.leg }}`: the plan names each job, since act's `strategy` context has no `job-index`),
`if: always()` and the download `pattern`, is the example's.
The action comes from this repository through `--local-repository sqlcanary/sqlcanary@v1=...`, and
actions/upload-artifact and actions/download-artifact are stand-ins (tests/support/actions/) that copy to and from
a host folder bound into every container; the test reads the artifacts there.

The sweep's legs upload their RunResults; merged per setting (bot.run.merge, as the report does), each equals an
unsharded `sqlcanary run` of the same suite with the same repeat on the host, case for case.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.base.results import RunResult
from bot.run.merge import merge_runs
from tests.support.fake_github import FakeGitHub
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS
from tests.support.tinyrepo import git

from .act_local import ActCommand, action_folder, example, local_repositories
from .conftest import REPO as SOURCE
from .test_act import ActRun

pytestmark = pytest.mark.docker

WORKFLOW_NAME = f"sqlcanary-sweep-{secrets.token_hex(4)}"
WORKFLOW_FILE = ".github/workflows/sqlcanary-sweep.yml"
GRID_FILE = "evals/sweeps/grid.yml"
SHARDS = 2
# Two settings the shop's reference agent (no LLM) tells apart: one answer per case, and two (pass@k, pass^k).
GRID = """\
settings:
  - {name: once}
  - {name: twice, repeat: 2}
"""
SETTINGS = {"once": 1, "twice": 2}
SHOP = SOURCE / "benchmarks" / "shop"


def _repository(root: Path, workflow: str) -> Path:
    """The working directory act copies into each job: the shop suite at the root, the grid, the workflow."""
    src = root / "agent"
    shutil.copytree(SHOP, src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "regressions"))
    (src / GRID_FILE).parent.mkdir(parents=True)
    (src / GRID_FILE).write_text(GRID)
    (src / WORKFLOW_FILE).parent.mkdir(parents=True)
    (src / WORKFLOW_FILE).write_text(workflow)
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "shop suite, grid and the sweep workflow")
    git(src, "remote", "add", "origin", f"https://github.com/{REPO}.git")  # GITHUB_REPOSITORY for act
    return src


def _event() -> dict:
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    return {
        "inputs": {"grid": GRID_FILE, "shards": SHARDS},
        "ref": "refs/heads/main",
        "repository": repo,
        "sender": {"login": "maintainer"},
        "workflow": WORKFLOW_FILE,
    }


@dataclass(frozen=True)
class Outcome:
    run: ActRun
    artifacts: Path
    workdir: Path

    def jobs(self, job_id: str) -> set[str]:
        """The jobs act ran for one job id (one per matrix combination)."""
        return {str(line["job"]) for line in self.run.lines if line.get("jobID") == job_id and "job" in line}

    def job_result(self, job: str) -> str | None:
        results = [line.get("jobResult") for line in self.run.lines if line.get("job") == job]
        return next((r for r in results if r), None)

    def step_log(self, job_id: str, step: str) -> str:
        return "\n".join(
            str(line.get("msg", "")).rstrip()
            for line in self.run.lines
            if line.get("jobID") == job_id and line.get("step") == step
        )


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path, act_binary: str) -> Iterator[Outcome]:
    root = tmp_path_factory.mktemp("act-sweep")
    workflow = example(
        "sqlcanary-sweep.yml",
        {"name: sqlcanary sweep\n": f"name: {WORKFLOW_NAME}\n"},
    )
    workdir = _repository(root, workflow)
    action_dir = action_folder(root / "action", wheelhouse)
    event = root / "event.json"
    event.write_text(json.dumps(_event()))
    with FakeGitHub(tokens=dict(TOKENS)) as fake:
        act = ActCommand(
            act_binary,
            workdir=workdir,
            workflow=WORKFLOW_FILE,
            event_name="workflow_dispatch",
            event=event,
            home=root / "home",
            artifacts=root / "artifacts",
            args=[
                *local_repositories(workflow, action_dir),
                "--env",
                f"GITHUB_API_URL={fake.base_url}",
                "-s",
                "GITHUB_TOKEN",
            ],
            env={"GITHUB_TOKEN": ACTIONS_TOKEN},
        )
        run = act.run(timeout=2400)
        (root / "act.log").write_text(run.text)  # the whole log, for a failure's reader
        yield Outcome(run, root / "artifacts", workdir)
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"


def test_the_plan_fans_out_to_four_matrix_jobs(swept: Outcome) -> None:
    legs = swept.jobs("sweep")
    assert len(legs) == len(SETTINGS) * SHARDS, (legs, swept.run.text[-6000:])
    uploaded = sorted(p.name for p in swept.artifacts.glob("sweep-*") if p.name != "sweep-report")
    assert uploaded == [f"sweep-{s}-{i}-of-{SHARDS}" for s in SETTINGS for i in range(1, SHARDS + 1)], (
        uploaded
    )
    for setting in SETTINGS:
        files = sorted(
            p.relative_to(swept.artifacts).as_posix()
            for p in swept.artifacts.glob(f"sweep-{setting}-*/**/*.json")
        )
        assert files == [
            f"sweep-{setting}-{i}-of-{SHARDS}/sweep/{setting}/shard-{i}-of-{SHARDS}.json"
            for i in range(1, SHARDS + 1)
        ], files


def test_the_report_job_renders_one_table_with_both_settings(swept: Outcome) -> None:
    [report_job] = swept.jobs("report")
    assert swept.job_result(report_job) == "success", swept.run.text[-6000:]
    folder = swept.artifacts / "sweep-report"
    data = json.loads((folder / "sweep-report.json").read_text())
    rows = {row["name"]: row for row in data["settings"]}
    assert list(rows) == list(SETTINGS)
    for name, repeat in SETTINGS.items():
        assert rows[name]["files"] == SHARDS and rows[name]["complete"] and rows[name]["repeat"] == repeat
        assert rows[name]["total"] == 84
    assert rows["twice"]["pass_at_k"] is not None and rows["once"]["pass_at_k"] is None
    markdown = (folder / "sweep-report.md").read_text()
    tables = [block for block in markdown.split("\n\n") if block.lstrip().startswith("|")]
    assert any("once" in table and "twice" in table for table in tables), markdown[:3000]
    summary = [
        line["content"]
        for line in swept.run.lines
        if line.get("command") == "summary" and line.get("jobID") == "report"
    ]
    assert summary and "once" in summary[-1] and "twice" in summary[-1], summary


def _host_run(suite: Path, out: Path, repeat: int) -> RunResult:
    subprocess.run(
        [sys.executable, "-m", "bot.cli", "run", str(suite), "--out", str(out), "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=suite,
    )
    assert out.is_file(), f"the host run wrote no {out}"
    return RunResult.model_validate_json(out.read_text())


def _cases(run: RunResult) -> dict[str, tuple]:
    return {c.id: (c.status, c.passes, c.prediction.sql) for c in run.cases}


def test_the_merged_shards_equal_an_unsharded_run_case_for_case(swept: Outcome, tmp_path: Path) -> None:
    for setting, repeat in SETTINGS.items():
        parts = [
            (str(p), RunResult.model_validate_json(p.read_text()))
            for p in sorted(swept.artifacts.glob(f"sweep-{setting}-*/sweep/{setting}/*.json"))
        ]
        assert len(parts) == SHARDS
        assert Counter(run.meta.setting.name for _, run in parts if run.meta.setting) == {setting: SHARDS}
        merged = merge_runs(parts)
        whole = _host_run(swept.workdir, tmp_path / f"{setting}.json", repeat)
        assert _cases(merged) == _cases(whole), setting
