"""`sqlcanary run` as pytest users expect it, on a real PostgreSQL: an invalid case (a gold that does not run)
fails the run naming file:line, `--fail-on-errored`, `--last-failed`, `--exitfirst` / `-x`, `--verbose` /
`--quiet`, an interruption that says where the finished cases went, and `show` with an agent's whole traceback.

The suite: `names` passes, `count` fails (the predictions say 3 customers, there are 2), `cities` passes, and an
agent that crashes with a traceback on `crashy`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.base.errors import EXIT_BAD_INPUT, EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK
from bot.base.results import read_run
from bot.cli import main

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

FIXTURE = """CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, city text);
INSERT INTO customers VALUES (1, 'Ada', 'Paris'), (2, 'Bo', 'Rome');
"""
CASES = {
    "names": "SELECT name FROM customers",
    "count": "SELECT count(*) FROM customers",
    "cities": "SELECT city FROM customers",
}
PREDICTIONS = {
    "names": "SELECT name FROM customers",
    "count": "SELECT 3",
    "cities": "SELECT city FROM customers",
}
# A command agent: answers from PREDICTIONS, crashes with a traceback on `crashy`, sleeps on `slow`.
AGENT = """import json, sys, time
request = json.loads(sys.stdin.read())
answers = json.loads(open(sys.argv[1]).read())
def deep(case):
    raise RuntimeError(f"the model refused {case}")
if request["id"] == "crashy":
    deep(request["id"])
if request["id"] == "slow":
    time.sleep(120)
print(json.dumps({"sql": answers[request["id"]]}))
"""


def write_suite(folder: Path, cases: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.sql").write_text(FIXTURE)
    lines = ["databases:", "  shop: shop.sql", "cases:"]
    for case_id, gold in cases.items():
        lines += [f"  - id: {case_id}", f"    question: What of {case_id}?", f"    gold_sql: {gold}"]
    (folder / "suite.yml").write_text("\n".join(lines) + "\n")
    (folder / "answers.json").write_text(
        json.dumps({**PREDICTIONS, **{k: "SELECT 1" for k in cases if k not in PREDICTIONS}})
    )
    (folder / "agent.py").write_text(AGENT)
    return folder / "suite.yml"


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no sqlcanary.yml around
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return write_suite(tmp_path / "s", CASES)


def agent_spec(suite: Path) -> str:
    return f"command:{sys.executable} {suite.parent / 'agent.py'} {suite.parent / 'answers.json'}"


def run(suite: Path, pg_dsn: str, out: Path, *extra: str, agent: str | None = None) -> int:
    argv = ["run", str(suite), "--agent", agent or agent_spec(suite), "--dsn", pg_dsn, "--out", str(out)]
    return main([*argv, *extra])


def test_a_broken_gold_fails_the_run_naming_the_case_and_its_line(tmp_path, pg_dsn, capsys, monkeypatch):
    """Before: "1 invalid ... 100.0%" and exit 0."""
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path / "s", {**CASES, "broken": "SELECT city FROM customerz"})
    out = tmp_path / "run.json"
    assert run(suite, pg_dsn, out, "-q", agent="gold") == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert read_run(out).summary.invalid == 1  # the results are still written
    assert "suite.yml:13: case broken is invalid" in captured.err  # `- id: broken` is line 13
    assert 'relation "customerz" does not exist' in captured.err
    assert "1 case(s) invalid" in captured.out  # the report says so beside the 100.0%
    assert run(suite, pg_dsn, out, "-q", "--allow-invalid", agent="gold") == EXIT_OK  # reported, not failing


def test_errored_cases_fail_the_run_only_with_fail_on_errored(tmp_path, pg_dsn, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path / "s", {"names": CASES["names"], "crashy": "SELECT 1"})
    out = tmp_path / "run.json"
    assert run(suite, pg_dsn, out, "-q") == EXIT_OK
    assert run(suite, pg_dsn, out, "-q", "--fail-on-errored") == EXIT_GATE
    assert "1 case(s) errored (--fail-on-errored): crashy" in capsys.readouterr().err


def test_show_prints_the_agents_whole_traceback(tmp_path, pg_dsn, capsys, monkeypatch):
    """Before: only the traceback's last line, as the case's reason."""
    monkeypatch.chdir(tmp_path)
    suite = write_suite(tmp_path / "s", {"names": CASES["names"], "crashy": "SELECT 1"})
    out = tmp_path / "run.json"
    assert run(suite, pg_dsn, out, "-q") == EXIT_OK
    capsys.readouterr()
    assert main(["show", str(out), "crashy"]) == EXIT_OK
    shown = capsys.readouterr().out
    assert "Traceback (most recent call last):" in shown
    assert "in deep" in shown and 'raise RuntimeError(f"the model refused {case}")' in shown
    assert "RuntimeError: the model refused crashy" in shown


def test_last_failed_reruns_what_did_not_pass_and_says_where_it_read_that(suite, pg_dsn, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert run(suite, pg_dsn, out, "--lf", "-q") == EXIT_OK  # no previous run: every case
    assert "no previous run at" not in capsys.readouterr().err  # -q: nothing said
    assert run(suite, pg_dsn, out, "--lf") == EXIT_OK
    err = capsys.readouterr().err
    assert f"--last-failed: 1 case(s) that did not pass in {out}" in err
    assert "--last-failed: 1 case(s) run again; " in err and "keeps the results of the other 2" in err
    again = read_run(
        out
    )  # the whole run, the failing case's result the new one (as pytest keeps every state)
    assert [c.id for c in again.cases] == ["names", "count", "cities"] and again.meta.filters == {}
    assert (again.summary.total, again.summary.passed, again.summary.failed) == (3, 2, 1)
    fixed = json.loads((suite.parent / "answers.json").read_text()) | {"count": CASES["count"]}
    (suite.parent / "answers.json").write_text(json.dumps(fixed))
    assert run(suite, pg_dsn, out, "--lf", "-q") == EXIT_OK
    assert {c.id: c.status for c in read_run(out).cases} == {
        "names": "passed",
        "count": "passed",
        "cities": "passed",
    }
    fresh = tmp_path / "fresh.json"
    assert run(suite, pg_dsn, fresh, "--last-failed") == EXIT_OK
    assert f"no previous run at {fresh}: running every selected case" in capsys.readouterr().err
    assert len(read_run(fresh).cases) == 3


def test_exitfirst_stops_at_the_first_case_that_does_not_pass_and_keeps_the_rest(
    suite, pg_dsn, tmp_path, capsys
):
    out = tmp_path / "run.json"
    assert run(suite, pg_dsn, out, "-x", "--jobs", "1", "-q") == EXIT_GATE
    kept = read_run(out)
    assert [c.id for c in kept.cases] == ["names", "count"]  # `cities` never asked
    assert kept.meta.complete is False
    err = capsys.readouterr().err
    assert "stopped at the first case that did not pass (--exitfirst): count failed" in err
    assert str(out) in err
    assert run(suite, pg_dsn, out, "--exitfirst", "--jobs", "2", "-q") == EXIT_GATE  # parallel workers too
    assert "count" in {c.id for c in read_run(out).cases} and read_run(out).meta.complete is False


def test_verbose_prints_a_line_per_case_and_quiet_none(suite, pg_dsn, tmp_path, capsys):
    assert run(suite, pg_dsn, tmp_path / "v.json", "--verbose", "--jobs", "1") == EXIT_OK
    err = capsys.readouterr().err
    assert "sqlcanary: [1/3] PASSED names" in err
    assert "sqlcanary: [2/3] FAILED count: 1 of 1 row differs" in err
    assert "\x1b[" not in err  # not a terminal: no colour
    assert run(suite, pg_dsn, tmp_path / "q.json", "-q") == EXIT_OK
    captured = capsys.readouterr()
    assert captured.err == "" and "results written to" in captured.out


def test_an_interrupted_run_says_where_the_finished_cases_are(tmp_path, pg_dsn):
    suite = write_suite(
        tmp_path / "s", {"names": CASES["names"], "slow": "SELECT 1", "count": CASES["count"]}
    )
    out = tmp_path / "run.json"
    argv = [
        "run",
        str(suite),
        "--agent",
        agent_spec(suite),
        "--dsn",
        pg_dsn,
        "--out",
        str(out),
        "--jobs",
        "1",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CI")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", *argv],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # the first case is done when its progress line is printed
        lines.append(line)
        if "[1/3]" in line:
            break
    else:
        pytest.fail(f"no progress line: {''.join(lines)}")
    time.sleep(0.5)  # the agent is now asked about `slow`
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, rest
    assert f"sqlcanary: interrupted: the 1 case(s) finished are kept in {out} (marked incomplete)" in rest
    kept = read_run(out)
    assert [c.id for c in kept.cases] == ["names"] and kept.meta.complete is False
