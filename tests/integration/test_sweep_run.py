"""A sweep on one machine, through `python -m bot` child processes and a real PostgreSQL: `sweep run` on two
cases of the shop example with two settings (the shop's reference agent, and predictions that get one case wrong)
runs both legs and writes the report the Action's `sweep-report` writes (md, html, json), naming both settings
with their pass rates; `sweep report` reads back the folder it wrote, and plain `run --shard` output with no
GitHub environment; a leg that fails is named with its exit code while the other's results are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.base.results import read_run

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
RIGHT = "shop-ads-spend-th-nov"
WRONG = "shop-ads-cvr-id-dec"
SELECT = ("--id", RIGHT, "--id", WRONG)
SPEND = (
    "SELECT sum(spend) FROM ads_daily_stats WHERE region_code = 'TH' "
    "AND stat_date BETWEEN '2025-11-01' AND '2025-11-30'"
)


def sqlcanary(*argv: str, cwd: Path, dsn: str) -> subprocess.CompletedProcess[str]:
    """The real command in a child process; no GITHUB_* or INPUT_* variable reaches it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env.update({"DATABASE_URL": dsn, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    return subprocess.run(
        [sys.executable, "-m", "bot", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A grid of two settings, and the predictions of the second: RIGHT as the gold, WRONG wrong."""
    answers = [{"id": RIGHT, "sql": SPEND}, {"id": WRONG, "sql": "SELECT 1"}]
    (tmp_path / "wrong.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    (tmp_path / "grid.yml").write_text(
        f"settings:\n  - {{name: reference}}\n  - {{name: wrong, agent: 'predictions:{tmp_path}/wrong.jsonl'}}\n"
    )
    return tmp_path


def rates(report_json: Path) -> list[tuple[str, int, int, float | None]]:
    data = json.loads(report_json.read_text())
    return [(s["name"], s["passed"], s["total"], s["pass_rate"]) for s in data["settings"]]


def test_sweep_run_runs_both_legs_and_writes_the_actions_report(folder, pg_dsn):
    done = sqlcanary(
        "sweep", "run", "grid.yml", str(SHOP), *SELECT, "--jobs", "2", "--out", "out", cwd=folder, dsn=pg_dsn
    )
    assert done.returncode == 0, done.stderr
    out = folder / "out"
    assert rates(out / "sweep-report.json") == [("reference", 2, 2, 1.0), ("wrong", 1, 2, 0.5)]
    md = (out / "sweep-report.md").read_text()
    assert "| `reference` |" in md and "100.0%" in md and "| `wrong` |" in md and "50.0%" in md
    assert f"lost 1 (`{WRONG}`)" in md
    html = (out / "sweep-report.html").read_text()
    assert "<svg" in html and "reference" in html and "wrong" in html
    assert (
        "leg reference: 2/2 passed (100.0%)" in done.stderr and "leg wrong: 1/2 passed (50.0%)" in done.stderr
    )
    for index, name in enumerate(
        ("reference", "wrong"), start=1
    ):  # each leg's run, as the Action's legs write
        leg = read_run(out / "sweep" / name / "run.json")
        assert leg.meta.setting is not None and (leg.meta.setting.name, leg.meta.setting.index) == (
            name,
            index,
        )
    assert read_run(out / "sweep" / "wrong" / "run.json").meta.agent.startswith("predictions:")

    again = sqlcanary("sweep", "report", "out", "--out", "again", cwd=folder, dsn=pg_dsn)
    assert again.returncode == 0, again.stderr
    assert json.loads((folder / "again" / "sweep-report.json").read_text()) == json.loads(
        (out / "sweep-report.json").read_text()
    )


def test_sweep_report_takes_run_shard_output_without_github(folder, pg_dsn):
    for i in (1, 2):
        ran = sqlcanary(
            "run",
            str(SHOP),
            *SELECT,
            "--agent",
            "gold",
            "--shard",
            f"{i}/2",
            "--out",
            f"runs/gold/{i}.json",
            "-q",
            cwd=folder,
            dsn=pg_dsn,
        )
        assert ran.returncode == 0, ran.stderr
    agent = f"predictions:{folder}/wrong.jsonl"
    ran = sqlcanary(
        "run", str(SHOP), *SELECT, "--agent", agent, "--out", "wrong.json", "-q", cwd=folder, dsn=pg_dsn
    )
    assert ran.returncode == 0, ran.stderr

    # a shard is named after its folder, a whole run after its file
    done = sqlcanary(
        "sweep",
        "report",
        "runs/gold/1.json",
        "runs/gold/2.json",
        "wrong.json",
        "--json",
        "r.json",
        cwd=folder,
        dsn=pg_dsn,
    )
    assert done.returncode == 0, done.stderr
    assert rates(folder / "r.json") == [("gold", 2, 2, 1.0), ("wrong", 1, 2, 0.5)]
    assert [s["files"] for s in json.loads((folder / "r.json").read_text())["settings"]] == [2, 1]

    named = sqlcanary("sweep", "report", "ref=runs/gold", "mine=wrong.json", cwd=folder, dsn=pg_dsn)
    assert named.returncode == 0, named.stderr
    assert "| `ref` |" in named.stdout and "| `mine` |" in named.stdout

    half = sqlcanary("sweep", "report", "runs/gold/1.json", cwd=folder, dsn=pg_dsn)
    assert (
        half.returncode == 2 and "setting 'gold'" in half.stderr
    )  # a missing shard is named, as `merge` does


def test_a_failing_leg_is_named_and_the_others_are_reported(folder, pg_dsn):
    grid = folder / "grid.yml"
    grid.write_text(grid.read_text() + "  - {name: broken, agent: 'command:/nonexistent/agent'}\n")
    done = sqlcanary("sweep", "run", "grid.yml", str(SHOP), *SELECT, "--out", "out", cwd=folder, dsn=pg_dsn)
    assert done.returncode == 2  # the leg's own exit code: bad input
    assert "leg broken: failed with exit code 2; it wrote no run" in done.stderr
    assert "/nonexistent/agent" in done.stderr  # its error, from its log
    assert "setting broken is left out of the report" in done.stderr
    assert (folder / "out" / "sweep" / "broken" / "run.log").is_file()
    assert rates(folder / "out" / "sweep-report.json") == [("reference", 2, 2, 1.0), ("wrong", 1, 2, 0.5)]


def test_a_bad_grid_exits_2_naming_the_file_and_line_before_any_leg(folder, pg_dsn):
    (folder / "grid.yml").write_text("settings:\n  - {name: a}\n  - {name: b, temperature: 9}\n")
    done = sqlcanary("sweep", "run", "grid.yml", str(SHOP), "--out", "out", cwd=folder, dsn=pg_dsn)
    assert done.returncode == 2
    assert "grid.yml:3: `settings[1].temperature`" in done.stderr
    assert not (folder / "out").exists()
