"""The folders the embedded server's start opens to others are said, not changed quietly (bot.db.opened)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from bot.db.opened import closed_folders, opened_since, say_opened

pytestmark = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0,
    reason="the embedded server opens folders only when started as root",
)


def test_a_private_folder_above_the_data_that_the_start_opens_is_named_with_its_modes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    private = tmp_path / "home"
    data = private / ".cache" / "sqlcanary" / "pg18"
    data.mkdir(parents=True)
    private.chmod(0o700)
    (private / ".cache").chmod(0o755)
    before = closed_folders([data])
    assert before.get(private) == 0o700
    assert private / ".cache" not in before  # already open: nothing to say about it
    assert data not in before  # the data folder itself is the server's own

    private.chmod(0o755)  # what the wheel does at every start, as root
    assert opened_since(before) == [f"{private} (0700 → 0755)"]
    with caplog.at_level(logging.WARNING, logger="sqlcanary.db"):
        say_opened(before)
    assert f"{private} (0700 → 0755)" in caplog.text and "--dsn" in caplog.text


def test_nothing_is_said_when_no_folder_changed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    private = tmp_path / "venv"
    (private / "lib").mkdir(parents=True)
    private.chmod(0o700)
    before = closed_folders([private / "lib" / "bin"])
    assert opened_since(before) == []
    with caplog.at_level(logging.WARNING, logger="sqlcanary.db"):
        say_opened(before)
    assert caplog.text == ""
