"""Every agent adapter through the real CLI on PostgreSQL: the same answers give the same statuses whichever adapter
delivers them; a misbehaving agent errors its own cases only; a saved run re-scores the same; the RunResult file
has the promised shape; the pass-rate gate exits 1.

The agents are the scripts in tests/fixtures/agents/ (they answer with the case's `instructions`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

# Imported at collection on purpose: Progress binds `stream=sys.stderr` when bot.report.console is first
# imported; first imported inside a test under capsys, it would keep that closed stream for the session.
import bot.commands.run  # noqa: F401
from bot.base.errors import EXIT_BAD_INPUT, EXIT_GATE, EXIT_OK
from bot.base.results import SCHEMA_VERSION, read_run
from bot.cases.loader import load_suite
from bot.cli import main

pytestmark = pytest.mark.integration

AGENTS = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
PY = sys.executable

FIXTURE = """\
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, city text);
INSERT INTO customers VALUES (1, 'Ada', 'Paris'), (2, 'Bo', 'Rome'), (3, 'Cy', NULL);
"""

# id -> (gold, the agent's answer, category); the answers the agents give are the cases' instructions.
CASES = {
    "count": ("SELECT count(*) FROM customers", "SELECT count(*) AS n FROM customers", "query"),
    "names": (
        "SELECT name FROM customers ORDER BY id",
        "SELECT c.name FROM customers c ORDER BY c.id",
        "query",
    ),
    "wrong": ("SELECT city FROM customers", "SELECT city FROM customers WHERE city IS NOT NULL", "query"),
    "add": (
        "INSERT INTO customers VALUES (4, 'Di', 'Oslo')",
        "INSERT INTO customers (id, name, city) VALUES (4, 'Di', 'Oslo')",
        "management",
    ),
}
EXPECTED = {"count": "passed", "names": "passed", "wrong": "failed", "add": "passed"}
CHECKS = '    checks:\n      - SELECT count(*) = 4 FROM customers\n      - {sql: "SELECT * FROM customers WHERE id = 4", expect: gold}\n'

# A suite where the agent misbehaves on some cases: id -> (instructions, expected error_class or None for passed).
MISBEHAVING = {
    "ok-1": ("SELECT count(*) FROM customers", None),
    "garbage": ("!garbage", "agent_bad_output"),
    "hangs": ("!sleep", "agent_timeout"),
    "crashes": ("!exit", "agent_crashed"),
    "ok-2": ("SELECT count(*) FROM customers", None),
}

# A command agent that breaks the stdout protocol (tests/fixtures/agents/misbehave.py): its case is errored, at once.
BROKEN_IO = {
    "ok-1": ("SELECT count(*) FROM customers", None),
    "latin1": ("!latin1", "agent_bad_output"),
    "huge": ("!huge", "agent_bad_output"),
    "closes-stdout": ("!close", "agent_crashed"),
    "dies-mid-line": ("!halfline", "agent_crashed"),
    "ok-2": ("SELECT count(*) FROM customers", None),
}
TINY_SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "single" / "single.yml"


def _suite_yaml(cases: dict[str, tuple[str, str, str]]) -> str:
    out = ["databases:", "  shop: shop.sql", "cases:"]
    for cid, (gold, answer, category) in cases.items():
        out += [
            f"  - id: {cid}",
            f"    question: case {cid}?",
            f"    category: {category}",
            f"    instructions: {json.dumps(answer)}",
            f"    gold_sql: {json.dumps(gold)}",
        ]
        if category == "management":
            out.append(CHECKS.rstrip("\n"))
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contract")
    (root / "shop.sql").write_text(FIXTURE)
    (root / "suite.yml").write_text(_suite_yaml(CASES))
    bad = {cid: ("SELECT count(*) FROM customers", what, "query") for cid, (what, _) in MISBEHAVING.items()}
    (root / "misbehaving.yml").write_text(_suite_yaml(bad))
    broken = {cid: ("SELECT count(*) FROM customers", what, "query") for cid, (what, _) in BROKEN_IO.items()}
    (root / "broken_io.yml").write_text(_suite_yaml(broken))
    with (root / "preds.jsonl").open("w") as fh:
        for cid, (_, answer, _) in CASES.items():
            fh.write(json.dumps({"id": cid, "sql": answer}) + "\n")
    return root


@pytest.fixture
def run_cli(workdir: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run `sqlcanary ARGS --dsn ... --out OUT -q` in an empty folder; return (exit code, OUT path)."""
    counter = iter(range(1000))

    def go(*args: str, out: Path | None = None) -> tuple[int, Path]:
        monkeypatch.chdir(workdir.parent)  # no sqlcanary.yml around
        monkeypatch.delenv("DATABASE_URL", raising=False)
        out = out or workdir / f"run-{next(counter)}-{args[0]}.json"
        code = main([*args, "--dsn", pg_dsn, "--out", str(out), "-q"])
        captured = capsys.readouterr()
        assert "internal error" not in captured.err, captured.err
        return code, out

    return go


def _statuses(path: Path) -> dict[str, str]:
    return {c.id: c.status for c in read_run(path).cases}


AGENT_SPECS = {
    "predictions": ("predictions:{workdir}/preds.jsonl",),
    "command": (f"command:{PY} {AGENTS / 'echo_agent.py'}",),
    "command --persistent": (f"command:{PY} {AGENTS / 'lines_agent.py'}", "--persistent"),
    "python": (f"python:{AGENTS / 'py_agent.py'}:answer",),
}


def _agent_args(kind: str, workdir: Path) -> list[str]:
    spec, *extra = AGENT_SPECS[kind]
    return ["--agent", spec.format(workdir=workdir), *extra]


# --- the same answers, the same statuses ---------------------------------------------------------------------


def test_gold_passes_every_case(run_cli, workdir: Path) -> None:
    code, out = run_cli("run", str(workdir / "suite.yml"), "--agent", "gold")
    assert code == EXIT_OK
    assert _statuses(out) == dict.fromkeys(CASES, "passed")


@pytest.mark.parametrize("kind", list(AGENT_SPECS))
def test_every_adapter_gives_the_same_statuses(run_cli, workdir: Path, kind: str) -> None:
    code, out = run_cli("run", str(workdir / "suite.yml"), *_agent_args(kind, workdir))
    assert code == EXIT_OK
    assert _statuses(out) == EXPECTED
    run = read_run(out)
    by_id = {c.id: c for c in run.cases}
    assert by_id["count"].prediction.sql == CASES["count"][1]
    assert by_id["wrong"].verdicts["execution"].match is False
    assert by_id["add"].verdicts["tcv"].match is True
    assert (run.summary.passed, run.summary.failed) == (3, 1)


# --- a misbehaving agent errors its own cases, and only those ---------------------------------------------------


@pytest.mark.parametrize("kind", ["command", "command --persistent", "python"])
def test_a_misbehaving_agent_errors_only_its_cases(run_cli, workdir: Path, kind: str) -> None:
    code, out = run_cli(
        "run", str(workdir / "misbehaving.yml"), *_agent_args(kind, workdir), "--agent-timeout", "2"
    )
    assert code == EXIT_OK
    by_id = {c.id: c for c in read_run(out).cases}
    for cid, (_, error_class) in MISBEHAVING.items():
        result = by_id[cid]
        if error_class is None:
            assert result.status == "passed", (cid, result.reason)
        else:
            assert (result.status, result.error_class) == ("errored", error_class), (cid, result.reason)
            assert result.reason.startswith("agent: ")
    assert "within 2s" in by_id["hangs"].reason
    assert "not JSON" in by_id["garbage"].reason or "expected an object" in by_id["garbage"].reason


def test_a_crash_reason_carries_the_agent_s_own_words(run_cli, workdir: Path) -> None:
    _, out = run_cli(
        "run", str(workdir / "misbehaving.yml"), *_agent_args("command", workdir), "--id", "crashes"
    )
    (result,) = read_run(out).cases
    assert "exited with code 3" in result.reason and "out of tokens" in result.reason
    assert "out of tokens" in (result.prediction.stderr or "")


@pytest.mark.parametrize("kind", ["command", "command --persistent"])
def test_a_broken_stdout_errors_its_case_and_the_run_goes_on(run_cli, workdir: Path, kind: str) -> None:
    """Non-UTF-8 bytes once crashed the whole run (exit 3, a partial file); a closed stdout waited for the timeout.
    The timeout here is long: a reason that names it means the breakage was not noticed."""
    code, out = run_cli(
        "run", str(workdir / "broken_io.yml"), *_agent_args(kind, workdir), "--agent-timeout", "45"
    )
    assert code == EXIT_OK
    run = read_run(out)
    assert run.meta.complete is True
    by_id = {c.id: c for c in run.cases}
    for cid, (_, error_class) in BROKEN_IO.items():
        result = by_id[cid]
        if error_class is None:
            assert result.status == "passed", (cid, result.reason)
        else:
            assert (result.status, result.error_class) == ("errored", error_class), (cid, result.reason)
            assert "within 45s" not in result.reason
    assert "not UTF-8 at offset" in by_id["latin1"].reason
    assert "larger than 1 MiB" in by_id["huge"].reason
    assert "closed its stdout" in by_id["closes-stdout"].reason
    assert "exited with code 4" in by_id["dies-mid-line"].reason


@pytest.mark.parametrize("persistent", [[], ["--persistent"]])
def test_an_agent_command_that_cannot_start_fails_the_run_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], persistent: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the folder a command given with --agent resolves against
    monkeypatch.delenv("DATABASE_URL", raising=False)
    out = tmp_path / "run.json"
    code = main(
        [
            "run",
            str(TINY_SUITE),
            "--agent",
            "command:no-such-binary --fast",
            *persistent,
            "--dsn",
            "postgresql://nobody@127.0.0.1:1/none",
            "--out",
            str(out),
            "-q",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    assert "no-such-binary" in err and str(tmp_path) in err
    assert not out.exists()


# --- rescore, the file, the gate -------------------------------------------------------------------------------


def test_rescore_gives_the_same_statuses(run_cli, workdir: Path) -> None:
    _, first = run_cli("run", str(workdir / "suite.yml"), *_agent_args("command", workdir))
    code, again = run_cli("rescore", str(first), str(workdir / "suite.yml"))
    assert code == EXIT_OK
    assert _statuses(again) == _statuses(first) == EXPECTED
    assert read_run(again).meta.agent == f"run:{first.name}"


def test_the_run_file_has_the_promised_shape(run_cli, workdir: Path) -> None:
    _, out = run_cli("run", str(workdir / "suite.yml"), *_agent_args("predictions", workdir))
    raw = json.loads(out.read_text())
    assert raw["schema_version"] == SCHEMA_VERSION
    assert {k: raw["summary"][k] for k in ("total", "passed", "failed", "invalid", "errored")} == {
        "total": 4,
        "passed": 3,
        "failed": 1,
        "invalid": 0,
        "errored": 0,
    }
    assert raw["summary"]["by_category"]["management"]["passed"] == 1
    verdicts = {c["id"]: c["verdicts"] for c in raw["cases"]}
    assert (
        verdicts["count"]["execution"]["match"] is True
        and verdicts["count"]["execution"]["scorer"] == "execution"
    )
    assert verdicts["wrong"]["execution"]["kind"] == "mismatch"
    meta = raw["meta"]
    assert set(meta["fixtures"]) == {"shop"} and meta["fixtures"]["shop"]
    assert meta["server_version"][:2].isdigit()
    assert meta["suite_hash"] == load_suite(workdir / "suite.yml").content_hash
    assert meta["complete"] is True and meta["preset"] == "sqlcanary"


@pytest.mark.parametrize(("rate", "code"), [("1.0", EXIT_GATE), ("0.75", EXIT_OK), ("0.5", EXIT_OK)])
def test_min_pass_rate_gate(run_cli, workdir: Path, rate: str, code: int) -> None:
    got, out = run_cli(
        "run", str(workdir / "suite.yml"), *_agent_args("predictions", workdir), "--min-pass-rate", rate
    )
    assert got == code
    assert read_run(out).summary.failed == 1  # the file is written whether the gate passes or not


def test_an_unknown_preset_in_a_case_is_bad_input(workdir: Path, pg_dsn: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yml"
    suite.write_text(
        f"databases: {{shop: {workdir / 'shop.sql'}}}\ncases:\n  - id: p\n    question: q?\n"
        "    gold_sql: SELECT 1\n    compare: {preset: bird2}\n"
    )
    assert (
        main(["run", str(suite), "--dsn", pg_dsn, "--out", str(tmp_path / "o.json"), "-q"]) == EXIT_BAD_INPUT
    )
