"""A warm pull-request check in the container reuses the fixtures the last job loaded: the image's entry point keeps
the embedded server's data directory in the action's cache dir (`.sqlcanary/cache/pg<major>`, which actions/cache
saves and restores), and fixes its ownership both ways (bot/db/pgcache.py).

The container is started as the runner starts a docker action (the workspace mounted and the current folder, the
event file, INPUT_* variables; no GitHub token: nothing is posted). The workspace belongs to uid 1001, the
hosted runner's user; between the two runs the cache is given to yet another uid, as a restore by another
runner would leave it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.support.tinyrepo import CONFIG, GOOD, commit_answers, git, make_tiny_repo

from .conftest import docker

pytestmark = pytest.mark.docker

RUNNER_UID = 1001
RESTORED_UID = 1002


def _chown(top: Path, uid: int) -> None:
    for path in (top, *top.rglob("*")):
        os.chown(path, uid, uid, follow_symlinks=False)


def _check(image: str, workspace: Path, event: Path) -> tuple[int, str]:
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_REPOSITORY": "acme/agent",
        "CI": "true",
        "INPUT_CONFIG": CONFIG,
        "INPUT_COMMENT": "off",
        "INPUT_CHECK-RUN": "false",
        "INPUT_CACHE-DIR": ".sqlcanary/cache",
    }
    result = docker(
        "run",
        "--rm",
        "--network",
        "none",
        "-v",
        f"{workspace}:/github/workspace",
        "-v",
        f"{event}:/github/workflow/event.json:ro",
        "--workdir",
        "/github/workspace",
        *[a for k, v in env.items() for a in ("-e", f"{k}={v}")],
        image,
    )
    return result.returncode, result.stdout + result.stderr


def _pgdata(workspace: Path) -> Path:
    found = sorted((workspace / ".sqlcanary" / "cache").glob("pg*"))
    assert len(found) == 1, found
    return found[0]


def _databases(pgdata: Path) -> set[str]:
    """The databases' folders (named by OID): a template loaded again would get a new one."""
    return {p.name for p in (pgdata / "base").iterdir()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("warm")
    ws = root / "workspace"
    ws.mkdir()
    make_tiny_repo(ws)
    base = git(ws, "rev-parse", "HEAD")
    head = commit_answers(ws, GOOD | {"names": "SELECT city FROM customers"}, "break names")
    side = {"full_name": "acme/agent", "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    event = root / "event.json"
    event.write_text(
        json.dumps(
            {
                "number": 1,
                "repository": side,
                "pull_request": {
                    "number": 1,
                    "user": {"login": "alice"},
                    "head": {"ref": "regress", "sha": head, "repo": side},
                    "base": {"ref": "main", "sha": base, "repo": side},
                },
            }
        )
    )
    _chown(ws, RUNNER_UID)
    return ws, event


def test_the_server_data_is_kept_with_the_cache_and_reused_after_a_restore(
    sqlcanary_image: str, workspace: tuple[Path, Path]
) -> None:
    ws, event = workspace
    code, log = _check(sqlcanary_image, ws, event)
    assert code == 1, log[-4000:]  # the planted regression fails the gate
    comparison = json.loads((ws / "sqlcanary-results" / "comparison.json").read_text())
    assert comparison["verdict"] == "regressions"
    assert "restored with the cache" not in log, log[-4000:]  # cold: the image's data dir was copied
    pgdata = _pgdata(ws)
    # given to the workspace's owner, stopped cleanly: actions/cache (the runner's user) can save it as it is
    assert not (pgdata / "postmaster.pid").exists()
    owners = {(p.lstat().st_uid, p.lstat().st_gid) for p in (pgdata, *pgdata.rglob("*"))}
    assert owners == {(RUNNER_UID, RUNNER_UID)}
    assert stat.S_IMODE(pgdata.stat().st_mode) == 0o700
    loaded = _databases(pgdata)

    _chown(ws / ".sqlcanary", RESTORED_UID)  # what a restore by another runner leaves
    code, log = _check(sqlcanary_image, ws, event)
    assert code == 1, log[-4000:]
    assert "PostgreSQL data restored with the cache" in log, log[-4000:]
    assert _databases(pgdata) == loaded  # the fixture template was reused, not loaded again
    owners = {(p.lstat().st_uid, p.lstat().st_gid) for p in (pgdata, *pgdata.rglob("*"))}
    assert owners == {(RUNNER_UID, RUNNER_UID)}


def test_a_stale_lock_file_from_a_killed_server_does_not_stop_the_next_job(
    sqlcanary_image: str, workspace: tuple[Path, Path]
) -> None:
    """A server killed with its container leaves postmaster.pid naming a pid that, in the next container, may be
    any process (here: pid 1, the action itself)."""
    ws, event = workspace
    if not any((ws / ".sqlcanary" / "cache").glob("pg*")):
        _check(sqlcanary_image, ws, event)
    pgdata = _pgdata(ws)
    (pgdata / "postmaster.pid").write_text(f"1\n/var/cache/sqlcanary/{pgdata.name}\n")
    code, log = _check(sqlcanary_image, ws, event)
    assert code == 1, log[-4000:]
    comparison = json.loads((ws / "sqlcanary-results" / "comparison.json").read_text())
    assert comparison["verdict"] == "regressions", log[-4000:]  # the server served the check
    assert not (pgdata / "postmaster.pid").exists()
