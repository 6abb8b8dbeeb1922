"""Shared fixtures: a real PostgreSQL (DATABASE_URL, testcontainers when asked, else the embedded server)
and the read-only datasets in ../shared (tests that need them skip with a reason when it is absent)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import reachable_python

REPO = Path(__file__).resolve().parents[1]
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
_HOLDER = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """As root every run's agent is sandboxed (bot.agents.sandbox): it runs as an unprivileged user that must
    reach the tests' temporary files. pytest keeps them in 0700 folders under /tmp/pytest-of-root, which every
    new session (another developer's too) makes 0700 again: give this session a base folder of its own that
    the agent's user can traverse (the `tmp_path_factory` below opens the folders made in it)."""
    if not AS_ROOT or hasattr(config, "workerinput"):
        return
    _run_under_a_reachable_python(config)
    if config.option.basetemp:
        return
    holder = Path(tempfile.mkdtemp(prefix="sqlcanary-tests-"))
    holder.chmod(0o755)
    config.option.basetemp = str(holder / "basetemp")
    config.stash[_HOLDER] = holder


def _unreachable_python() -> Path | None:
    """The folder that keeps the sandbox's user from running this Python, if one does."""
    from bot.agents.reach import Unreachable, check_reachable

    try:
        check_reachable(Path(sys.executable), who="the sandbox's user", what="this Python", execute=True)
    except Unreachable as exc:
        return exc.blocker
    return None


def _run_under_a_reachable_python(config: pytest.Config) -> None:
    """As root, the tests' sandboxed agents run this Python as an unprivileged user. When a private folder (a
    0700 /root holding pyenv) keeps that user out, run the session again under a copy it can reach
    (tests/support/reachable_python.py), rather than open the user's folder. Once: the copy is reachable."""
    if os.environ.get(reachable_python.HOLDER_VARIABLE) or _unreachable_python() is None:
        return
    original = Path(sys.executable)
    if not reachable_python.restartable(sys.argv):
        return  # `pytest.main()` from a program: the header says what keeps the sandbox out, and the fix
    try:
        runtime = reachable_python.build(original)
    except (OSError, RuntimeError) as exc:  # then the header says what keeps the sandbox out, and the fix
        print(f"sqlcanary tests: no reachable copy of {original}: {exc}", file=sys.stderr)
        return
    argv = reachable_python.session_argv(runtime, sys.argv, original)
    env = reachable_python.session_environment(dict(os.environ), runtime, original)
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()  # the new session writes to the real terminal, not pytest's capture
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(runtime.python, argv, env)


def _unreachable_checkout() -> Path | None:
    """The folder that keeps the sandbox's user from this checkout (its `bot/` and `benchmarks/`), if one does."""
    from bot.agents.reach import Unreachable, check_reachable

    try:
        check_reachable(REPO, who="the sandbox's user", what="this checkout")
    except Unreachable as exc:
        return exc.blocker
    return None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """As root, whether the sandbox's user can run this Python and read this checkout (README, "Quick start"):
    when the session runs under a reachable copy of the Python, say so; when either cannot be reached, the tests
    that sandbox an agent fail with sqlcanary's own message: say it once, up front, with the fix."""
    if not AS_ROOT:
        return None
    lines = []
    copied = os.environ.get(reachable_python.ORIGINAL_VARIABLE)
    if copied:
        was = json.loads(copied)["python"]
        lines.append(
            f"sandbox: {was} is out of the sandbox's user's reach; running under a copy in {sys.prefix}"
        )
    elif (blocker := _unreachable_python()) is not None:
        lines.append(
            f"sandbox: this Python cannot be run by the sandbox's user; fix with `chmod o+x {blocker}`"
        )
    if (folder := _unreachable_checkout()) is not None:
        lines.append(
            f"sandbox: this checkout cannot be read by the sandbox's user, so the tests that sandbox an agent "
            f"fail; fix with `chmod o+x {folder}`, or clone it where others may read (/tmp, /work, /home)"
        )
    return lines or None


def pytest_unconfigure(config: pytest.Config) -> None:
    holder = config.stash.get(_HOLDER, None)
    if holder is not None:
        shutil.rmtree(holder, ignore_errors=True)
    runtime = os.environ.get(reachable_python.HOLDER_VARIABLE)
    if runtime and AS_ROOT and not hasattr(config, "workerinput"):
        reachable_python.stop_programs_of(
            Path(runtime)
        )  # the embedded server it started, before its files go
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="session")
def tmp_path_factory(tmp_path_factory: pytest.TempPathFactory) -> pytest.TempPathFactory:
    """pytest's, with every folder it makes (and the session's base folder) traversable by others when root, so
    a sandboxed agent can read the files a test writes for it (files are 0644 as usual)."""
    if AS_ROOT:
        base = tmp_path_factory.getbasetemp()
        base.chmod(0o755)
        make = tmp_path_factory.mktemp

        def mktemp(basename: str, numbered: bool = True) -> Path:
            path = make(basename, numbered)
            path.chmod(0o755)
            return path

        tmp_path_factory.mktemp = mktemp  # type: ignore[method-assign]
    return tmp_path_factory


def shared_dir() -> Path | None:
    candidate = Path(os.environ.get("SQLCANARY_SHARED", REPO.parent / "shared"))
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def shared() -> Path:
    found = shared_dir()
    if found is None:
        pytest.skip("../shared (the datasets) is absent: this is a user's clone; CI has it")
    return found


@pytest.fixture(scope="session")
def pg_server():
    """A superuser connection to a real PostgreSQL; fails loudly when none can be started."""
    from bot.base.settings import Settings
    from bot.db.provision import provision

    mode = "docker" if os.environ.get("SQLCANARY_TEST_POSTGRES") == "docker" else "auto"
    settings = Settings.from_environ(os.environ)  # the server the CLI runs the tests start would use
    return provision(dsn=settings.database_url, mode=mode, cache_dir=settings.embedded_dir)


@pytest.fixture(scope="session")
def pg_dsn(pg_server) -> str:
    return pg_server.admin_dsn


@pytest.fixture(autouse=True, scope="session")
def _no_answer_cache():
    """Tests reach their agents: no answer from the user's cache (tests of the cache turn it back on)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("SQLCANARY_ANSWER_CACHE", "off")
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def _fresh_decision_caches():
    """Each test computes its verdicts afresh (tests/support/caches.py says why)."""
    from tests.support.caches import clear_decision_caches

    clear_decision_caches()
