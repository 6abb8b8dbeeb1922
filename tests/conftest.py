"""Shared fixtures: a real PostgreSQL (DATABASE_URL, testcontainers when asked, else the embedded server)
and the read-only datasets in ../shared (tests that need them skip with a reason when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path | None:
    candidate = Path(os.environ.get("SQLCANARY_SHARED", REPO.parent / "shared"))
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def shared() -> Path:
    found = shared_dir()
    if found is None:
        pytest.skip("../shared (the datasets) is absent: this is a user's clone; CI has it")
    return found


@pytest.fixture(scope="session")
def pg_server():
    """A superuser connection to a real PostgreSQL; fails loudly when none can be started."""
    from bot.db.provision import provision
    from bot.settings import Settings

    mode = "docker" if os.environ.get("SQLCANARY_TEST_POSTGRES") == "docker" else "auto"
    settings = Settings.from_environ(os.environ)  # the server the CLI runs the tests start would use
    return provision(dsn=settings.database_url, mode=mode, cache_dir=settings.embedded_dir)


@pytest.fixture(scope="session")
def pg_dsn(pg_server) -> str:
    return pg_server.admin_dsn


@pytest.fixture(autouse=True, scope="session")
def _no_answer_cache():
    """Tests reach their agents: no answer from the user's cache (tests of the cache turn it back on)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("SQLCANARY_ANSWER_CACHE", "off")
    yield
    patch.undo()
