"""End to end with a real model: plant a KB regression in a copy of the shop, `sqlcanary check` it, and let
`sqlcanary repair --from-check` fix it with Qwen2.5 Coder 1.5B served by llama.cpp.

Asserts only what any correct repair satisfies, never the model's wording: the broken case passes again, every
case of the suite passes (nothing else broke), and only knowledge-base files changed. Run on its own:
`SQLCANARY_LLM_TESTS=1 pytest tests/llm` (see conftest.py)."""

from __future__ import annotations

import json

import pytest

from benchmarks.llm.workspace import Sqlcanary, make_shop_repo, repair_regression

pytestmark = [pytest.mark.llm, pytest.mark.integration]
# `aggregation: sum` where DAU is averaged: one wrong word breaks 12 cases; the 1.5B model fixes it in 2 calls
# (benchmarks/llm/README.md), about a minute and a half on 2 cores.
REGRESSION = "dau_sum_not_avg"


def _story(result, sq: Sqlcanary) -> str:
    """What the model proposed and why each plan was refused: the failure message a product fix needs."""
    attempts = [{k: a.get(k) for k in ("n", "outcome", "reason", "plan")} for a in result.attempts()]
    return (
        f"\ncheck exit {result.check_exit}, repair exit {result.repair_exit}, LLM {result.llm}, "
        f"stopped: {result.outcome.get('stopped')}, error: {result.error}\nattempts:\n"
        f"{json.dumps(attempts, indent=1)[:6000]}\n--- sqlcanary output ---\n" + "\n".join(sq.log)[-4000:]
    )


def test_the_model_repairs_a_planted_regression(local_llm, tmp_path):
    sq = Sqlcanary(base_url=local_llm.base_url, model=local_llm.model)
    base = make_shop_repo(tmp_path / "base")

    result = repair_regression(base, REGRESSION, tmp_path, sq, max_llm_calls=12)

    assert result.check_exit == 1, _story(result, sq)  # the check saw the regression...
    assert result.failing_before == sorted(result.breaks), _story(result, sq)  # ...and exactly its cases
    assert result.fixed, "the broken case still fails after the repair" + _story(result, sq)
    broken = sorted(i for i, s in result.after.items() if s != "passed")
    assert result.green, f"the repaired suite has failing cases {broken}" + _story(result, sq)
    assert result.changed, "the repair changed no file" + _story(result, sq)
    assert result.only_kb, f"the repair changed files outside kb/: {result.changed}" + _story(result, sq)
    assert (result.llm.get("calls") or 0) <= 12
