"""The agent's sandbox (bot.agents.sandbox), attacked by real agent processes through a real `sqlcanary run`
(a process of its own, with a GitHub token and the admin DSN in its environment, as in the Action): the agent
runs as an unprivileged user of its own, reads no ancestor's environment, writes neither the runner's files nor
the evaluator's stdout, cannot reach the embedded server's superuser, and nothing it starts outlives the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg2
import pytest

from bot.agents.sandbox import open_sandbox
from bot.agents.user_ids import processes_by_user
from bot.base.results import RunResult, read_run
from bot.db.provision import socket_files

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (sys.platform.startswith("linux") and os.geteuid() == 0),
        reason="the agent's sandbox needs root on Linux (as in the Action's container and CI); as a user the agent "
        "runs unsandboxed, as before",
    ),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
AGENTS = FIXTURES / "sandbox"
SHOP_SQL = FIXTURES / "suites" / "single" / "shop.sql"
TOKEN = "ghs_sandboxTestToken0123456789abcdef"
GOLD = "SELECT count(*) FROM customers"


@dataclass(frozen=True)
class Evaluation:
    code: int
    run: RunResult | None
    pid: int  # the evaluator's
    stdout: str
    stderr: str
    text: str  # the RunResult file as written

    def used(self, case_id: str) -> tuple[str, ...]:
        assert self.run is not None
        return next(c for c in self.run.cases if c.id == case_id).prediction.used

    @property
    def uid(self) -> int:
        assert self.run is not None and self.run.meta.sandbox, self.stderr
        kind, _, number = self.run.meta.sandbox.partition(" ")
        assert kind == "uid"
        return int(number)


def write_suite(root: Path, attacks: dict[str, str]) -> Path:
    shutil.copy(SHOP_SQL, root / "shop.sql")
    lines = ["databases:", "  shop: shop.sql", "cases:"]
    for cid, attack in attacks.items():
        lines += [
            f"  - id: {cid}",
            f"    question: {cid}?",
            f"    instructions: {json.dumps(attack)}",
            f"    gold_sql: {GOLD}",
        ]
    (root / "suite.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "suite.yml"


def evaluate(root: Path, suite: Path, spec: str, pg_dsn: str, *flags: str) -> Evaluation:
    """`sqlcanary run` in a process of its own, holding what the Action's process holds."""
    out = root / "run.json"
    env = {
        **os.environ,
        "GITHUB_TOKEN": TOKEN,
        "INPUT_GITHUB-TOKEN": TOKEN,
        "ACTIONS_RUNTIME_TOKEN": TOKEN,
        "DATABASE_URL": pg_dsn,
        "SQLCANARY_ANSWER_CACHE": "off",
    }
    argv = [sys.executable, "-m", "bot", "run", str(suite), "--agent", spec, "--out", str(out), "--jobs", "1"]
    argv += flags
    proc = subprocess.Popen(
        argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    stdout, stderr = proc.communicate(timeout=300)
    text = out.read_text(encoding="utf-8") if out.is_file() else ""
    run = read_run(out) if out.is_file() else None
    return Evaluation(proc.returncode, run, proc.pid, stdout, stderr, text)


ATTACKS = {
    "environ": "environ",
    "append": "append {output}",
    "fd": "fd",
    "linger": "linger {drop}",
    "socket": "socket {socket}",
    "id": "id",
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sandbox")
    assert os.stat(root).st_mode & 0o005 == 0o005, "tests/conftest.py makes the tests' folders reachable"
    return root


@pytest.fixture(scope="module")
def attacked(workdir: Path, pg_server, pg_dsn: str) -> tuple[Evaluation, dict[str, Path]]:
    """One run of the hostile command agent, one case per attack."""
    runner = workdir / "runner"
    runner.mkdir()
    output = runner / "github_output"  # as the runner's GITHUB_OUTPUT: root's, 0644
    output.write_text("verdict=fail\n")
    output.chmod(0o644)
    drop = workdir / "drop"  # where the lingering child would write
    drop.mkdir()
    drop.chmod(0o1777)
    sockets = socket_files(pg_dsn)
    socket = sockets[0] if sockets else Path("/nonexistent/.s.PGSQL.5432")
    try:  # the same socket where every user can reach the file: only its own mode guards it
        os.link(socket, drop / "pg.sock")
        socket = drop / "pg.sock"
    except OSError:
        pass
    paths = {"output": output, "drop": drop, "socket": socket}
    attacks = {cid: attack.format(**paths) for cid, attack in ATTACKS.items()}
    suite = write_suite(workdir, attacks)
    result = evaluate(workdir, suite, f"command:{sys.executable} {AGENTS / 'attacker.py'}", pg_dsn)
    assert result.code == 0 and result.run is not None, result.stderr
    return result, paths


def refused(used: tuple[str, ...]) -> bool:
    return bool(used) and all(":refused " in u for u in used)


def test_the_agent_runs_as_an_unprivileged_user_of_its_own(attacked) -> None:
    result, _ = attacked
    assert result.uid >= 61000 and result.used("id") == (f"id:{result.uid}", "nnp:1")  # no setuid escalation
    assert f"agent sandbox uid {result.uid}" in result.stderr  # said once, in the run's first line


def test_no_ancestor_environment_can_be_read(attacked) -> None:
    result, _ = attacked
    used = result.used("environ")
    assert (
        f"environ {result.pid}:refused PermissionError" in used and len(used) >= 2
    )  # the evaluator, pytest...
    assert refused(used), used
    leaked = (TOKEN, TOKEN[::-1].encode().hex(), "DATABASE_URL"[::-1].encode().hex())
    assert not any(s in f"{result.text}{result.stdout}{result.stderr}" for s in leaked)


def test_the_runners_files_cannot_be_written(attacked) -> None:
    result, paths = attacked
    assert refused(result.used("append")), result.used("append")
    assert paths["output"].read_text() == "verdict=fail\n"


def test_the_evaluators_stdout_and_stderr_cannot_be_opened(attacked) -> None:
    result, _ = attacked
    assert refused(result.used("fd")) and len(result.used("fd")) == 2, result.used("fd")
    assert "::stop-commands::" not in result.stdout + result.stderr


def test_a_detached_child_dies_with_the_run(attacked) -> None:
    result, paths = attacked
    drop = paths["drop"]
    assert result.used("linger") == ("linger:DONE started",)  # the double-forked child did start
    pid = int((drop / "started").read_text())
    assert result.uid not in processes_by_user() and not _alive(pid)  # no process of the agent's user is left
    (drop / "go").write_text("")
    time.sleep(0.5)  # what the child would have had to write it (it is gone: nothing can)
    assert not (drop / "escaped").exists()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_the_embedded_superuser_cannot_be_reached(attacked, pg_server, pg_dsn: str) -> None:
    if pg_server.kind != "embedded":
        pytest.skip("the tests use a server of their own (DATABASE_URL), not the embedded one")
    result, paths = attacked
    assert refused(result.used("socket")), result.used("socket")
    for path in socket_files(pg_dsn):
        assert os.stat(path).st_mode & 0o777 == 0o700, path
    conn = psycopg2.connect(pg_dsn)  # root still connects
    conn.close()


def test_a_python_agent_runs_in_a_host_process_of_the_sandbox_user(tmp_path: Path, pg_dsn: str) -> None:
    suite = write_suite(tmp_path, {"where": "where", "raises": "raise"})
    result = evaluate(tmp_path, suite, f"python:{AGENTS / 'py_attacker.py'}:answer", pg_dsn)
    assert result.run is not None, result.stderr
    uid, pid, ppid, environ = result.used("where")
    assert uid == f"uid:{result.uid}" and result.uid != 0
    assert (
        pid != f"pid:{result.pid}" and ppid == f"ppid:{result.pid}"
    )  # another process, the evaluator's child
    assert environ == "environ:refused PermissionError"
    raised = next(c for c in result.run.cases if c.id == "raises")
    assert raised.status == "errored" and raised.error_class == "agent_crashed"
    assert raised.reason == "agent: the agent raised RuntimeError: the model is out of tokens"
    assert raised.prediction.stderr and "Traceback" in raised.prediction.stderr
    assert TOKEN not in result.text


@pytest.fixture
def private_agents(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """The attacker agents in a folder only root may enter (a checkout or a venv under a dev container's /root)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    for name in ("attacker.py", "py_attacker.py"):
        shutil.copy(AGENTS / name, private / name)
    specs = (
        f"command:{sys.executable} {private / 'attacker.py'}",
        f"python:{private / 'py_attacker.py'}:answer",
    )
    return private, specs


@pytest.mark.parametrize("flags", [("--sandbox", "on"), ("--side", "head"), ("--side", "base")])
def test_an_agent_the_sandbox_user_cannot_reach_is_refused_where_the_sandbox_is_required(
    tmp_path: Path, pg_dsn: str, private_agents: tuple[Path, tuple[str, ...]], flags: tuple[str, ...]
) -> None:
    """A side of a check (and `--sandbox on`, which the Action asks for) never runs an agent as root."""
    private, specs = private_agents
    suite = write_suite(tmp_path, {"id": "id"})
    for spec in specs:
        result = evaluate(tmp_path, suite, spec, pg_dsn, *flags)
        assert result.code == 2 and result.run is None, result.stderr
        assert f"chmod o+x {private}" in result.stderr
        assert "cannot be reached by the agent's user" in result.stderr
        assert "`--sandbox off` runs your own agent unsandboxed" in result.stderr


def test_a_run_of_ones_own_agent_the_sandbox_user_cannot_reach_runs_it_as_root_and_says_so(
    tmp_path: Path, pg_dsn: str, private_agents: tuple[Path, tuple[str, ...]]
) -> None:
    """`sqlcanary run` (the README's first command) in a dev container whose checkout or Python is private to
    root: the user's own agent runs, as any program they start would, with the fix said and recorded."""
    private, specs = private_agents
    suite = write_suite(tmp_path, {"id": "id"})
    for spec in specs:
        result = evaluate(tmp_path, suite, spec, pg_dsn)
        assert result.code == 0 and result.run is not None, result.stderr
        assert result.run.meta.sandbox == f"off: {private} cannot be reached by the sandbox's user"
        assert f"warning: the agent's file {private}/" in result.stderr
        assert f"chmod o+x {private}" in result.stderr and "runs as root, unsandboxed" in result.stderr
        assert result.used("id")[0] in (
            "id:0",
            "uid:0",
        )  # the command agent says `id -u`, the python one getuid()


def test_sandbox_off_runs_a_reachable_agent_as_root(tmp_path: Path, pg_dsn: str) -> None:
    suite = write_suite(tmp_path, {"id": "id"})
    result = evaluate(
        tmp_path, suite, f"command:{sys.executable} {AGENTS / 'attacker.py'}", pg_dsn, "--sandbox", "off"
    )
    assert result.run is not None, result.stderr
    assert result.run.meta.sandbox == "off: --sandbox off"
    assert result.used("id")[0] == "id:0"


def test_closing_kills_every_process_of_the_user_and_removes_its_home() -> None:
    sandbox = open_sandbox()
    assert sandbox is not None
    try:
        fork = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)\n"
        proc = sandbox.popen([sys.executable, "-c", fork], env=None, stdout=subprocess.DEVNULL)
        proc.wait()
        assert sandbox.uid in processes_by_user()  # the grandchild, in a session of its own
        home = sandbox.home
        assert home.stat().st_uid == sandbox.uid and home.stat().st_mode & 0o777 == 0o700
    finally:
        sandbox.close()
    assert sandbox.uid not in processes_by_user() and not home.exists()
