"""bot.agents.reach: what the sandbox's user must be able to search before the agent starts. A venv's
`bin/python` is a link to a Python elsewhere; the folders above the link (a venv under a 0700 folder) are searched
before the link is followed, so they count too (issue 25: the check looked only where the link led, the agent
then failed on every case instead of the run saying why at once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agents.reach import Unreachable, check_command, check_reachable


def _open_tree(root: Path) -> tuple[Path, Path]:
    """`private/venv/bin/python` (a link) -> `public/python3`, `private` closed to others."""
    public = root / "public"
    public.mkdir()
    target = public / "python3"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o755)
    link_dir = root / "private" / "venv" / "bin"
    link_dir.mkdir(parents=True)
    link = link_dir / "python"
    link.symlink_to(target)
    for folder in (root, public, root / "private" / "venv", link_dir):
        folder.chmod(0o755)
    (root / "private").chmod(0o700)
    return link, target


def test_a_link_under_a_closed_folder_is_unreachable_though_its_target_is_not(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    link, target = _open_tree(tmp_path)
    check_reachable(target, who="uid 1", what="the agent's program", execute=True)  # the target alone is fine
    with pytest.raises(Unreachable) as caught:
        check_reachable(link, who="uid 1", what="the agent's program", execute=True)
    assert caught.value.blocker == tmp_path / "private"
    assert f"chmod o+x {tmp_path / 'private'}" in str(caught.value)


def test_a_command_run_through_the_link_names_the_closed_folder(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    link, _ = _open_tree(tmp_path)
    agent = tmp_path / "public" / "agent.py"
    agent.write_text("print('{}')\n")
    agent.chmod(0o644)
    with pytest.raises(Unreachable) as caught:
        check_command([str(link), "agent.py"], str(tmp_path / "public"), {"PATH": "/usr/bin"}, who="uid 1")
    assert caught.value.blocker == tmp_path / "private"


def test_a_link_whose_target_sits_under_a_closed_folder_is_unreachable(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    real = hidden / "python3"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    hidden.chmod(0o700)
    link = tmp_path / "python"
    link.symlink_to(real)
    with pytest.raises(Unreachable) as caught:
        check_reachable(link, who="uid 1", what="the agent's program", execute=True)
    assert caught.value.blocker == hidden
