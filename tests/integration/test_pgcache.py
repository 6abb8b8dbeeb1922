"""bot.db.pgcache on a real embedded PostgreSQL: the action's server keeps its data in the cache folder (seeded
from an initialised data directory, as the image's), stops cleanly and hands the folder to the workspace's owner
when the step ends, and starts again on it after a restore that left it to another user. The docker test
(tests/docker/test_warm_cache.py) does the same through the image's entry point."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest

from bot.base.errors import DatabaseError
from bot.base.settings import Settings
from bot.db.pgcache import adopt, kept_with_cache, release
from bot.db.provision import _embedded_major, provision
from tests.support.tinyrepo import git

pytestmark = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0, reason="the ownership hand-over needs root (as in the image)"
)
OWNER = (4242, 4242)  # the workspace's owner: the runner's user


def _owners(top: Path) -> set[tuple[int, int]]:
    return {(p.lstat().st_uid, p.lstat().st_gid) for p in (top, *top.rglob("*"))}


def _query(dsn: str, sql: str) -> list[tuple[object, ...]]:
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall() if cur.description else []
    finally:
        conn.close()


def _open_folder() -> Path:
    """A folder whose every parent lets others pass, as the image's workspace (pytest's own are below a 0700
    folder, which sqlcanary does not open: the data would not be kept there, bot.db.serverhome)."""
    folder = Path(tempfile.mkdtemp(prefix="sqlcanary-pgcache-", dir="/tmp"))
    folder.chmod(0o755)
    return folder


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    folder = _open_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def seed() -> Iterator[Path]:
    """An initialised data directory, stopped: what the image holds in /var/cache/sqlcanary."""
    root = _open_folder()
    provision(dsn=None, cache_dir=root)
    release(root / f"pg{_embedded_major()}", (0, 0))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_the_data_is_kept_with_the_cache_and_given_back_after_a_restore(seed: Path, tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", pg_seed=seed)
    said: list[str] = []
    with kept_with_cache(settings, owner=OWNER, say=said.append) as kept:
        assert kept.embedded_dir == tmp_path / "cache"
        server = provision(dsn=None, cache_dir=kept.embedded_dir)
        _query(server.admin_dsn, "CREATE DATABASE loaded_fixture")
    assert said == []  # seeded, nothing to restore
    pgdata = tmp_path / "cache" / f"pg{_embedded_major()}"
    assert not (pgdata / "postmaster.pid").exists()  # stopped cleanly
    assert _owners(pgdata) == {OWNER}  # the runner's user can save it
    assert stat.S_IMODE(pgdata.stat().st_mode) == 0o700

    for path in (pgdata, *pgdata.rglob("*")):  # a restore by yet another user
        os.chown(path, 4343, 4343, follow_symlinks=False)
    with kept_with_cache(settings, owner=OWNER, say=said.append) as kept:
        server = provision(dsn=None, cache_dir=kept.embedded_dir)
        names = {row[0] for row in _query(server.admin_dsn, "SELECT datname FROM pg_database")}
    assert "loaded_fixture" in names
    assert len(said) == 1 and "restored with the cache" in said[0]
    assert _owners(pgdata) == {OWNER}


def test_a_stale_lock_file_is_removed_and_a_live_one_kept(seed: Path, tmp_path: Path) -> None:
    major = _embedded_major()
    adopted = adopt(tmp_path, seed, major)
    (adopted.pgdata / "postmaster.pid").write_text(
        f"{os.getpid()}\n{adopted.pgdata}\n"
    )  # a pid, not a server
    assert adopt(tmp_path, seed, major).how == "reused"
    assert not (adopted.pgdata / "postmaster.pid").exists()


def test_without_a_seed_nothing_changes(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", pg_dir=tmp_path / "pg")
    with kept_with_cache(settings, owner=OWNER) as kept:
        assert kept is settings
    assert not (tmp_path / "cache").exists()


def test_a_link_in_place_of_the_data_directory_is_refused(seed: Path, tmp_path: Path) -> None:
    major = _embedded_major()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"pg{major}").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DatabaseError, match="is not a folder"):
        adopt(tmp_path, seed, major)


def test_a_restored_folder_configures_nothing(seed: Path, tmp_path: Path) -> None:
    """postgresql.conf could name a command the server runs (archive_command) or a library it loads: after a
    restore the server's configuration files are the seed's again."""
    major = _embedded_major()
    adopted = adopt(tmp_path, seed, major)
    (adopted.pgdata / "postgresql.auto.conf").write_text(
        "archive_mode = on\narchive_command = 'touch /tmp/x'\n"
    )
    (adopted.pgdata / "pg_hba.conf").write_text("host all all 0.0.0.0/0 trust\n")
    adopt(tmp_path, seed, major)
    for name in ("postgresql.auto.conf", "pg_hba.conf", "postgresql.conf"):
        assert (adopted.pgdata / name).read_bytes() == (seed / f"pg{major}" / name).read_bytes(), name


def test_a_cache_folder_a_commit_planted_keeps_no_data(seed: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".sqlcanary" / "cache" / f"pg{_embedded_major()}").mkdir(parents=True)
    (repo / ".sqlcanary" / "cache" / f"pg{_embedded_major()}" / "postgresql.auto.conf").write_text(
        "# planted\n"
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plant")
    settings = Settings(cache_dir=repo / ".sqlcanary" / "cache", pg_dir=tmp_path / "image", pg_seed=seed)
    said: list[str] = []
    with kept_with_cache(settings, owner=OWNER, repo=repo, say=said.append) as kept:
        assert kept.embedded_dir == tmp_path / "image"  # the image's own data directory
    assert len(said) == 1 and "a commit put there" in said[0]
