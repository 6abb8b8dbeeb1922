"""What `sqlcanary run` shows a person at a terminal and what it writes to a CI log, from real processes: in tmux
(a real TTY, captured with its colours) a progress bar and coloured statuses; under NO_COLOR the same without
colour; with CI=true and pipes (a CI log) plain progress lines and no escape sequence at all.

tmux is a Debian package (.ci/run installs it); without it this test fails in CI and skips elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_run_habits import CASES, agent_spec, write_suite

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
ESC = "\x1b["


@pytest.fixture
def tmux():
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is missing in CI: .ci/run installs it with apt-get (the Debian package `tmux`)")
        pytest.skip("tmux is not installed (Debian: apt-get install tmux); CI installs it and runs this test")
    return found


def _argv(suite: Path, pg_dsn: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bot",
        "run",
        str(suite),
        "--agent",
        agent_spec(suite),
        "--dsn",
        pg_dsn,
        "--out",
        str(out),
    ]


def _environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "DATABASE_URL", "TMUX")}
    return {**env, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", **extra}


def in_tmux(tmux: str, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run `argv` in a tmux pane of its own server (a real terminal); return its exit code and the pane's text
    with its escape sequences (`capture-pane -e`)."""
    socket = f"sqlcanary-test-{os.getpid()}-{cwd.name}"
    done = cwd / "exit-code"
    command = " ".join(subprocess.list2cmdline([a]) for a in argv)
    shell = f"cd {cwd} && {command}; echo $? > {done}; sleep 600"
    base = [tmux, "-L", socket]
    subprocess.run(
        [*base, "new-session", "-d", "-s", "run", "-x", "200", "-y", "60", shell], env=env, check=True
    )
    try:
        deadline = time.monotonic() + 120
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        screen = subprocess.run(
            [*base, "capture-pane", "-p", "-e", "-J", "-t", "run"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert done.exists(), f"the run did not end in 120 s:\n{screen}"
        return int(done.read_text().strip()), screen
    finally:
        subprocess.run([*base, "kill-server"], env=env, check=False, capture_output=True)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "s", CASES)  # `count` fails, the others pass


def test_a_terminal_shows_a_progress_bar_and_colours(tmux, suite, pg_dsn, tmp_path):
    code, screen = in_tmux(tmux, _argv(suite, pg_dsn, tmp_path / "run.json"), tmp_path, _environ())
    assert code == 0, screen
    assert "3/3" in screen and "case/s" in screen, screen  # tqdm's bar, left on the screen when it ends
    assert f"{ESC}32m" in screen and f"{ESC}31m" in screen, screen  # green passes, red failures
    assert "1 failed, 2 passed in" in screen


def test_no_color_keeps_the_bar_and_drops_the_colours(tmux, suite, pg_dsn, tmp_path):
    code, screen = in_tmux(
        tmux, _argv(suite, pg_dsn, tmp_path / "run.json"), tmp_path, _environ(NO_COLOR="1")
    )
    assert code == 0, screen
    assert "3/3" in screen and "1 failed, 2 passed in" in screen, screen
    assert f"{ESC}3" not in screen and f"{ESC}1m" not in screen, screen  # no colour, no bold


def test_a_ci_log_gets_plain_lines(suite, pg_dsn, tmp_path):
    done = subprocess.run(
        [*_argv(suite, pg_dsn, tmp_path / "run.json"), "--jobs", "1"],
        cwd=tmp_path,
        env=_environ(CI="true"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "sqlcanary: [3/3] passed 2 failed 1 invalid 0 errored 0" in done.stderr.splitlines()
    assert ESC not in done.stdout and ESC not in done.stderr and "\r" not in done.stderr
    assert done.stdout.splitlines()[-1].startswith("1 failed, 2 passed in")
