"""The README's "Use on GitHub" tables of inputs and outputs agree with action.yml, both ways: every input and
output of action.yml is in the README with its default, and the README names none that action.yml lacks. The
tables are generated (`python benchmarks/action_reference.py`); a README that drifted from action.yml fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.action_reference import END, START, block, main, render, rewrite

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
ACTION = REPO / "action.yml"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \|(.*)\|\s*$")


def _action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text())


def _rows(text: str, header: str) -> dict[str, list[str]]:
    """The rows of the table under `header` (its first column's code span -> the other cells)."""
    table = text.split(header, 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        if match := ROW.match(line):
            rows[match.group(1)] = [cell.strip() for cell in re.split(r"(?<!\\)\|", match.group(2))]
    return rows


def test_the_readme_block_is_what_action_yml_renders() -> None:
    assert block(README.read_text()) == render(_action()), (
        "README.md's inputs and outputs differ from action.yml: run `python benchmarks/action_reference.py`"
    )


def test_every_input_of_action_yml_is_in_the_readme_with_its_default_and_no_other() -> None:
    inputs = _action()["inputs"]
    rows = _rows(block(README.read_text()), "| Input | Default |")
    assert set(rows) == set(inputs)
    for name, spec in inputs.items():
        default = spec.get("default")
        assert rows[name][0] == (f"`{default}`" if default not in (None, "") else ""), name


def test_every_output_of_action_yml_is_in_the_readme_and_no_other() -> None:
    rows = _rows(block(README.read_text()), "| Output |")
    assert set(rows) == set(_action()["outputs"])


def test_an_input_added_to_action_yml_is_drift(tmp_path: Path) -> None:
    """The check fails on a README one input behind, and the rewrite brings it back in step."""
    action = _action()
    action["inputs"]["brand-new"] = {"description": "a | pipe", "default": "x"}
    (tmp_path / "action.yml").write_text(yaml.safe_dump(action, sort_keys=False))
    readme = tmp_path / "README.md"
    readme.write_text(README.read_text())
    args = ["--readme", str(readme), "--action", str(tmp_path / "action.yml")]
    assert main([*args, "--check"]) == 1
    assert main(args) == 0 and main([*args, "--check"]) == 0
    row = _rows(block(readme.read_text()), "| Input | Default |")["brand-new"]
    assert row == ["`x`", "a \\| pipe"]
    assert readme.read_text().replace(block(readme.read_text()), "") == README.read_text().replace(
        block(README.read_text()), ""
    )  # only the block changed


def test_markers_must_be_there_once() -> None:
    with pytest.raises(ValueError, match="marker"):
        block("no markers")
    with pytest.raises(ValueError, match="marker"):
        block(f"{START}\n{END}\n{START}\n{END}")
    assert block(rewrite(f"a\n{START}\nold\n{END}\nb", "new")) == "new"
