"""KB path safety and crash-safe edits of the repair loop (no database)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.config.model import Config, KBConfig
from bot.kb.files import KBFiles, RefusedPath
from bot.repair.transaction import JOURNAL_DIR, Transaction, recover

REPO = Path(__file__).resolve().parents[2]
GLOBS = ("kb/**/*.yaml", "kb/**/*.yml", "kb/**/*.sql", "kb/**/*.md")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "kb" / "metrics").mkdir(parents=True)
    (tmp_path / "kb" / "metrics" / "dau.yaml").write_text("name: dau\nfilters:\n  - tz_type = 'local'\n")
    (tmp_path / "kb" / "tables.yaml").write_text("tables: {}\n")
    (tmp_path / "agent.py").write_text("print('agent')\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / "outside.yaml").write_text("secret: 1\n")
    return tmp_path


def kbfiles(root: Path) -> KBFiles:
    return KBFiles.from_config(Config(base_dir=str(root), kb=KBConfig(paths=GLOBS)))


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and ".sqlcanary" not in p.parts
    }


REFUSED = [
    ("../../.github/workflows/x.yml", "`..`"),
    ("/etc/passwd", "absolute"),
    ("agent.py", "no code"),
    (".github/x.yml", ".github"),
    ("kb/../.github/workflows/ci.yml", "`..`"),
    ("outside.yaml", "kb.paths"),
    ("kb/metrics/run.sh", "no code"),
    ("kb/./metrics/dau.yaml", "`.`"),
    ("kb\\metrics\\dau.yaml", "backslash"),
    ("kb/.git/config.yaml", ".git"),
    ("~/kb/x.yaml", "absolute"),
]


@pytest.mark.parametrize(("path", "why"), REFUSED)
def test_refused_paths_name_the_reason_and_write_nothing(repo: Path, path: str, why: str):
    kb = kbfiles(repo)
    before = snapshot(repo)
    with pytest.raises(RefusedPath, match=None) as info:
        kb.resolve(path)
    assert why in info.value.message
    with Transaction(kb) as tx, pytest.raises(RefusedPath):
        tx.apply({"kb/metrics/dau.yaml": "changed\n", path: "pwned\n"})
    assert snapshot(repo) == before  # the good path in the same batch was not written either


def test_symlink_inside_kb_pointing_outside_is_refused(repo: Path, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "x.yaml").write_text("outside\n")
    (repo / "kb" / "link.yaml").symlink_to(elsewhere / "x.yaml")
    (repo / "kb" / "linkdir").symlink_to(elsewhere, target_is_directory=True)
    (repo / "kb" / "to_agent.yaml").symlink_to(repo / "agent.py")
    kb = kbfiles(repo)
    for path in ("kb/link.yaml", "kb/linkdir/x.yaml", "kb/linkdir/new.yaml"):
        with pytest.raises(RefusedPath, match="outside"):
            kb.resolve(path)
    with pytest.raises(RefusedPath, match="symlink"):
        kb.resolve("kb/to_agent.yaml")
    with Transaction(kb) as tx, pytest.raises(RefusedPath):
        tx.apply({"kb/linkdir/x.yaml": "pwned\n"})
    assert (elsewhere / "x.yaml").read_text() == "outside\n"
    assert (repo / "agent.py").read_text() == "print('agent')\n"


def test_glob_matching_and_kb_listing(repo: Path):
    kb = kbfiles(repo)
    assert kb.resolve("kb/tables.yaml") == (repo / "kb" / "tables.yaml").resolve()
    assert kb.resolve("kb/snippets/new.sql").name == "new.sql"  # may not exist yet
    assert set(kb.files()) == {"kb/metrics/dau.yaml", "kb/tables.yaml"}
    narrow = KBFiles(root=repo.resolve(), globs=("kb/metrics/*.yaml",))
    with pytest.raises(RefusedPath, match="kb.paths"):
        narrow.resolve("kb/tables.yaml")


def test_apply_commit_keeps_edits_and_drops_the_journal(repo: Path):
    kb = kbfiles(repo)
    mode = (repo / "kb" / "tables.yaml").stat().st_mode & 0o777
    with Transaction(kb) as tx:
        previous = tx.apply({"kb/tables.yaml": "tables: {t: 1}\n", "kb/metrics/new.yaml": "name: new\n"})
        assert previous == {"kb/tables.yaml": "tables: {}\n", "kb/metrics/new.yaml": None}
        tx.commit()
    assert (repo / "kb" / "tables.yaml").read_text() == "tables: {t: 1}\n"
    assert (repo / "kb" / "metrics" / "new.yaml").read_text() == "name: new\n"
    assert (repo / "kb" / "tables.yaml").stat().st_mode & 0o777 == mode
    assert not any((repo / JOURNAL_DIR).iterdir())
    assert not [p for p in (repo / "kb").rglob("*.tmp")]


def test_leaving_without_commit_or_on_error_reverts_byte_for_byte(repo: Path):
    kb = kbfiles(repo)
    before = snapshot(repo)
    with Transaction(kb) as tx:
        tx.apply({"kb/tables.yaml": "a\n"})
        undo = tx.apply({"kb/tables.yaml": "b\n", "kb/metrics/x.yaml": "name: x\n"})
        assert undo["kb/tables.yaml"] == "a\n"
        tx.apply(undo)  # one step back
        assert (repo / "kb" / "tables.yaml").read_text() == "a\n"
        assert not (repo / "kb" / "metrics" / "x.yaml").exists()
    assert snapshot(repo) == before
    with pytest.raises(RuntimeError, match="boom"), Transaction(kb) as tx:
        tx.apply({"kb/metrics/dau.yaml": "broken"})
        raise RuntimeError("boom")
    assert snapshot(repo) == before


def test_ctrl_c_reverts(repo: Path):
    kb = kbfiles(repo)
    before = snapshot(repo)
    with pytest.raises(KeyboardInterrupt), Transaction(kb) as tx:
        tx.apply({"kb/metrics/dau.yaml": "half\n", "kb/snippets/s.sql": "SELECT 1\n"})
        raise KeyboardInterrupt
    assert snapshot(repo) == before


CHILD = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {repo!r})
    from bot.config.model import Config, KBConfig
    from bot.kb.files import KBFiles
    from bot.repair.transaction import Transaction
    kb = KBFiles.from_config(Config(base_dir={root!r}, kb=KBConfig(paths=("kb/**/*.yaml", "kb/**/*.sql"))))
    with Transaction(kb) as tx:
        tx.apply({{"kb/metrics/dau.yaml": "edited\\n", "kb/snippets/new.sql": "SELECT 2\\n"}})
        tx.apply({{"kb/tables.yaml": "tables: edited\\n"}})
        print("applied", flush=True)
        time.sleep(60)
    """
)


def _child(repo: Path) -> subprocess.Popen:
    code = CHILD.format(repo=str(REPO), root=str(repo))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_killed_mid_apply_is_rolled_back_by_recover(repo: Path):
    before = snapshot(repo)
    proc = _child(repo)
    assert proc.stdout.readline().strip() == "applied"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert (repo / "kb" / "metrics" / "dau.yaml").read_text() == "edited\n"  # the kill left it edited
    restored = recover(kbfiles(repo))
    assert set(restored) == {"kb/metrics/dau.yaml", "kb/snippets/new.sql", "kb/tables.yaml"}
    assert snapshot(repo) == before
    assert recover(kbfiles(repo)) == []


def test_sigterm_reverts_before_exit(repo: Path):
    before = snapshot(repo)
    proc = _child(repo)
    assert proc.stdout.readline().strip() == "applied"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) != 0
    assert snapshot(repo) == before


def test_a_journal_entry_written_before_the_file_changed_is_harmless(repo: Path):
    """A crash between journaling and writing: recover puts back the (unchanged) original."""
    kb = kbfiles(repo)
    before = snapshot(repo)
    tx = Transaction(kb)
    tx._journal("kb/metrics/dau.yaml", kb.resolve("kb/metrics/dau.yaml"))
    tx._journal("kb/metrics/brand_new.yaml", kb.resolve("kb/metrics/brand_new.yaml"))
    assert recover(kb) == ["kb/metrics/dau.yaml", "kb/metrics/brand_new.yaml"]
    assert snapshot(repo) == before


def test_a_forged_journal_cannot_write_outside_the_kb(repo: Path):
    kb = kbfiles(repo)
    folder = repo / JOURNAL_DIR / "forged"
    folder.mkdir(parents=True)
    (folder / "0.orig").write_text("pwned\n")
    (folder / "manifest.json").write_text('{"files": [{"path": "agent.py", "backup": "0.orig"}]}')
    with pytest.raises(RefusedPath):
        recover(kb)
    assert (repo / "agent.py").read_text() == "print('agent')\n"
    assert os.path.exists(repo / "agent.py")
