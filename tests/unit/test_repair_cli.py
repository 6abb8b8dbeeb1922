"""`sqlcanary repair --from-check DIR` reads what `sqlcanary check --out DIR` wrote."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bot.base.errors import ConfigError
from bot.commands.repair import _from_check


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"run_file": None, "from_check": None, "base": None, **kw})


def test_from_check_takes_head_and_base(tmp_path: Path):
    (tmp_path / "head.json").write_text("{}")
    (tmp_path / "base.json").write_text("{}")
    args = _args(from_check=str(tmp_path))
    _from_check(args)
    assert (args.run_file, args.base) == (str(tmp_path / "head.json"), str(tmp_path / "base.json"))


def test_an_explicit_base_wins(tmp_path: Path):
    (tmp_path / "head.json").write_text("{}")
    (tmp_path / "base.json").write_text("{}")
    args = _args(from_check=str(tmp_path), base="other.json")
    _from_check(args)
    assert args.base == "other.json"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({}, "give the run to repair"),
        ({"from_check": "."}, "no head.json here"),
        ({"from_check": ".", "run_file": "x.json"}, "not both"),
    ],
)
def test_bad_combinations_are_bad_input(kw, message, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=message):
        _from_check(_args(**kw))
