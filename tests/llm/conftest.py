"""The `llm` tests: a real model (Qwen2.5 Coder 1.5B, llama.cpp on CPU) behind sqlcanary.

They take minutes of both cores and fetch 1.1 GB on first use (benchmarks/llm/setup.py), so they run only when
asked: `SQLCANARY_LLM_TESTS=1 pytest tests/llm`, which .ci/run does as its own step after the main `pytest`
(never beside other CPU-heavy tests). Elsewhere they are skipped with that reason, shown by `-ra`.

Where the model cannot be had (no registry, no wheel for this platform, a hash that does not match) they skip
with the reason; with CI=true they fail instead, because CI must prove the real-model path.
"""

from __future__ import annotations

import os
import sys

import pytest

ENABLE = "SQLCANARY_LLM_TESTS"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(ENABLE) == "1":
        return
    skip = pytest.mark.skip(
        reason=f"a real model on CPU (minutes, 1.1 GB): run `{ENABLE}=1 pytest tests/llm`"
    )
    for item in items:
        if item.get_closest_marker("llm"):
            item.add_marker(skip)


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the llm tests may not skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def local_llm():
    """The 1.5B model served on a free loopback port for the session; stopped (SIGTERM) at the end."""
    from benchmarks.llm.server import ServerError, local_server
    from benchmarks.llm.setup import SetupError, ensure

    try:
        installed = ensure("1.5b", log=lambda msg: print(f"setup: {msg}", file=sys.stderr))
    except SetupError as exc:
        unavailable(f"the local model cannot be set up here: {exc}")
    try:
        with local_server(installed) as srv:
            yield srv
    except ServerError as exc:
        unavailable(f"the llama.cpp server did not start: {exc}")
