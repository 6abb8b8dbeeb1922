"""Every annotated pair of tests/fixtures/verdicts, checked by ONE test, for mutation testing (benchmarks/mutation/run.py).

tests/integration/test_verdicts.py checks each pair in a test of its own, but runs all of them through the CLI once
in a module-scoped fixture: mutmut records the verdict code as covered by the first of those tests only, and would
run that one test (one pair's assertions) against a mutant. Here one test runs the same CLI runs (default rules, then
each preset) and applies the same per-pair assertions to every pair, so a mutant that changes any pair's verdict
fails it. Needs a real PostgreSQL (tests/conftest.py's `pg_dsn`); not part of `pytest tests`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration import (
    test_verdicts as verdicts,
)  # the module, so that pytest collects its tests only there

pytestmark = pytest.mark.integration


def test_every_pair_keeps_its_verdict(tmp_path: Path, pg_dsn: str) -> None:
    failures: list[str] = []
    default = verdicts.run_pairs(tmp_path / "default", pg_dsn, verdicts.PAIRS, preset=None)
    for pair in verdicts.PAIRS:
        try:
            verdicts.test_default_verdict(pair, default)
        except AssertionError as exc:
            failures.append(f"default {pair.test_id}: {exc}")
    for preset in verdicts.PRESETS:
        pairs = [p for p in verdicts.PAIRS if p.presets and preset in p.presets]
        runs = verdicts.run_pairs(tmp_path / preset, pg_dsn, pairs, preset=preset)
        for pair in pairs:
            try:
                verdicts.test_preset_verdict(preset, pair, lambda _preset, runs=runs: runs)
            except AssertionError as exc:
                failures.append(f"{preset} {pair.test_id}: {exc}")
    assert not failures, f"{len(failures)} verdict(s) changed:\n" + "\n".join(failures[:20])
