"""Fixtures the integration tests of the Action share."""

from __future__ import annotations

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.github_fixtures import TOKENS


@pytest.fixture
def fake():
    """The fake GitHub (every request body validated against GitHub's OpenAPI description); a test fails when it
    saw a request it does not know."""
    with FakeGitHub(tokens=dict(TOKENS)) as server:
        yield server
    assert server.errors == [], f"the fake GitHub saw requests it does not know: {server.errors}"
