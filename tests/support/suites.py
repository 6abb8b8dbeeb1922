"""Small suites built in memory for tests that need a Suite value but no suite folder."""

from __future__ import annotations

from pathlib import Path

from bot.cases.model import Case, Suite, SuiteSettings


def one_case_suite(root: Path) -> Suite:
    """Suite `s` under `root`: database `shop` (shop.sql) and one case, `revenue`."""
    return Suite(
        name="s",
        root=root,
        databases={"shop": (root / "shop.sql",)},
        settings=SuiteSettings(),
        cases=(Case(id="revenue", question="Revenue?", db="shop", gold_sql=("SELECT 1",)),),
        content_hash="h",
        files=(root / "suite.yml",),
        location=root,
    )
