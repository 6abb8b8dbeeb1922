"""A grid's settings as the README's "Sweeps" section documents them, through `sqlcanary sweep plan` in a child
process: `settings` crossed with `axes` is their product (every setting with every combination, setting-major,
named `<setting>-<values>`), a setting that sets a field an axis varies is refused naming the file and line, and
an unknown preset is refused in the grid (not in a leg, after the sweep started)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def sqlcanary(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def plan(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "grid.yml").write_text(text)
    return sqlcanary("sweep", "plan", "--grid", "grid.yml", cwd=tmp_path)


def test_settings_with_axes_are_their_product_setting_major(tmp_path):
    done = plan(
        tmp_path,
        "settings:\n"
        "  - {name: a, model: m-a}\n"
        "  - {name: b, agent: gold, repeat: 1}\n"
        "axes:\n"
        "  preset: [bird, spider2]\n"
        "repeat: 3\n",
    )
    assert done.returncode == 0, done.stderr
    legs = json.loads(done.stdout)["include"]
    got = [(e["setting"], e["index"], e.get("model"), e.get("agent"), e["preset"], e["repeat"]) for e in legs]
    assert got == [
        ("a-bird", 1, "m-a", None, "bird", 3),
        ("a-spider2", 2, "m-a", None, "spider2", 3),
        ("b-bird", 3, None, "gold", "bird", 1),  # a setting's own repeat wins over the file's
        ("b-spider2", 4, None, "gold", "spider2", 1),
    ]


def test_two_axes_cross_each_setting_with_every_combination(tmp_path):
    done = plan(tmp_path, "settings:\n  - {name: s}\naxes:\n  model: [m1, m2]\n  temperature: [0, 0.7]\n")
    assert done.returncode == 0, done.stderr
    names = [e["setting"] for e in json.loads(done.stdout)["include"]]
    assert names == ["s-m1-t0", "s-m1-t0.7", "s-m2-t0", "s-m2-t0.7"]


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "settings:\n  - {name: a}\n  - {name: b,\n     preset: bird}\naxes:\n  preset: [bird, spider2]\n",
            "grid.yml:4: `settings[1].preset`: setting 'b' sets `preset`, which `axes.preset` varies",
        ),
        (
            "settings:\n  - {name: a, preset: nope}\n",
            "grid.yml:2: `settings[0].preset`: unknown preset 'nope'",
        ),
        ("axes:\n  preset: [bird,\n    nope]\n", "grid.yml:3: `axes.preset[1]`: unknown preset 'nope'"),
        ("axes:\n  temperature: [0, 5]\n", "grid.yml:2: `axes.temperature[1]`"),
    ],
)
def test_an_ambiguous_or_unknown_field_exits_2_naming_the_file_line_and_key(tmp_path, text, words):
    done = plan(tmp_path, text)
    assert done.returncode == 2
    assert words in done.stderr
    assert done.stdout == ""
