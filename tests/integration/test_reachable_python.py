"""A test session whose Python only root can reach runs under a copy the sandbox's user can run
(tests/support/reachable_python.py, README "Quick start"): the copy carries its environment's packages and
scripts, and no folder of the user's changes mode."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.agents.reach import check_reachable
from tests.support import reachable_python

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
pytestmark = pytest.mark.skipif(not AS_ROOT, reason="only a root session sandboxes its agents")
NOBODY = 65534


def as_nobody(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, cwd="/", capture_output=True, text=True, user=NOBODY, group=NOBODY, extra_groups=[]
    )


def private_venv(tmp_path: Path) -> Path:
    """A virtual environment in a 0700 folder, with a module in its site-packages and a script in its bin."""
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)
    venv = private / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env={"PATH": os.defpath}
    )
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "probe_of_the_copy.py").write_text("WHERE = 'the private venv'\n")
    script = venv / "bin" / "probe-script"
    script.write_text(f"#!{venv}/bin/python\nimport probe_of_the_copy\nprint(probe_of_the_copy.WHERE)\n")
    script.chmod(0o755)
    return venv


def test_the_sandbox_user_runs_a_copy_of_a_python_it_cannot_reach(tmp_path: Path) -> None:
    venv = private_venv(tmp_path)
    python = venv / "bin" / "python"
    modes = reachable_python.folder_modes(python)
    cfg = (venv / "pyvenv.cfg").read_text()
    with pytest.raises(PermissionError):  # the user cannot even start it: what the copy is for
        as_nobody([str(python), "-c", "pass"], {"PATH": os.defpath})

    runtime = reachable_python.build(python, parent=tmp_path)
    env = {"PATH": f"{runtime.bin_dir}{os.pathsep}{os.defpath}", "LD_LIBRARY_PATH": str(runtime.lib_dir)}
    run = as_nobody(
        [str(runtime.python), "-c", "import sys, probe_of_the_copy as p; print(sys.prefix, p.WHERE)"], env
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split(" ", 1) == [str(runtime.holder / "venv"), "the private venv\n"]
    script = as_nobody([str(runtime.bin_dir / "probe-script")], env)
    assert (script.returncode, script.stdout) == (0, "the private venv\n"), script.stderr

    assert reachable_python.folder_modes(python) == modes  # nothing of the user's was opened...
    assert stat.S_IMODE(venv.parent.stat().st_mode) == 0o700
    assert (venv / "pyvenv.cfg").read_text() == cfg  # ...or written through a hard link
    assert (venv / "bin" / "probe-script").read_text().startswith(f"#!{venv}/bin/python\n")


def test_this_session_runs_under_a_copy_when_its_python_was_out_of_reach() -> None:
    copied = os.environ.get(reachable_python.ORIGINAL_VARIABLE)
    if not copied:
        pytest.skip("this session's Python is within the sandbox user's reach: nothing was copied")
    was = json.loads(copied)
    check_reachable(Path(sys.executable), who="the sandbox's user", what="this Python", execute=True)
    assert Path(sys.executable) != Path(was["python"])
    assert reachable_python.folder_modes(Path(was["python"])) == was["modes"]


def test_the_session_is_started_again_the_way_it_was_started(tmp_path: Path) -> None:
    old_bin, new_bin = tmp_path / "old" / "bin", tmp_path / "new" / "bin"
    for folder in (old_bin, new_bin):
        folder.mkdir(parents=True)
        (folder / "pytest").write_text("#!/bin/sh\n")
    main = tmp_path / "pytest" / "__main__.py"
    main.parent.mkdir()
    main.write_text("")
    runtime = reachable_python.Runtime(tmp_path, new_bin / "python", new_bin, tmp_path / "lib")
    original = old_bin / "python"
    by_script = reachable_python.session_argv(
        runtime, [str(old_bin / "pytest"), "-x", "tests/unit"], original
    )
    assert by_script == [str(new_bin / "python"), str(new_bin / "pytest"), "-x", "tests/unit"]
    by_module = reachable_python.session_argv(runtime, [str(main), "-q"], original)
    assert by_module == [str(new_bin / "python"), "-m", "pytest", "-q"]
    assert reachable_python.restartable([str(old_bin / "pytest")]) and reachable_python.restartable(
        [str(main)]
    )
    assert not reachable_python.restartable(["-c", "-q"])  # pytest.main() from a program


def test_what_the_session_started_from_the_copy_is_stopped_before_the_copy_goes(tmp_path: Path) -> None:
    """The embedded PostgreSQL a session under the copy starts runs the copy's binaries: it is stopped before
    the copy is removed (a server left running without its files broke the next session), with any child it
    started; a process of another program, and this one, are left alone."""
    holder = tmp_path / "copy"
    (holder / "bin").mkdir(parents=True)
    shutil.copy2("/bin/sleep", holder / "bin" / "sleep")
    server = subprocess.Popen(
        ["/bin/sh", "-c", f"{holder / 'bin' / 'sleep'} 300 & exec {holder / 'bin' / 'sleep'} 301"],
        start_new_session=True,
    )
    other = subprocess.Popen(["/bin/sleep", "302"])
    try:
        for _ in range(500):  # the shell has exec'd the copy's program
            if os.readlink(f"/proc/{server.pid}/exe").startswith(str(holder)):
                break
            time.sleep(0.02)
        stopped = reachable_python.stop_programs_of(holder, timeout=5)
        assert server.pid in stopped and other.pid not in stopped
        server.wait(timeout=5)  # reaped already, or now
        assert not Path(f"/proc/{server.pid}").exists()
        leftovers = [e.name for e in os.scandir("/proc") if e.name.isdigit() and _runs_under(e.name, holder)]
        assert leftovers == [], "the child it started is stopped too"
        assert other.poll() is None, "another program's process is left alone"
    finally:
        other.kill()
        other.wait()
        subprocess.run(["pkill", "-f", str(holder)], check=False)


def _runs_under(pid: str, holder: Path) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/exe").startswith(str(holder))
    except OSError:
        return False
