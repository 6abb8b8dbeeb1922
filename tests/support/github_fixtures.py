"""Helpers for tests of bot/github: a running FakeGitHub with one repository and one open pull request, and
PyGithub clients for its tokens. A test module makes its fixture with `yield from running_fake()`."""

from __future__ import annotations

from collections.abc import Iterator

from github import Github

from bot.github.client import make_github
from tests.support.fake_github import FakeGitHub, Token

REPO = "acme/agent"
HEAD_SHA = "a" * 40
BASE_SHA = "b" * 40
ACTIONS_TOKEN = "ghs_actionsTOKENvalue0123456789"  # an installation token: writes as github-actions[bot]
USER_TOKEN = "ghp_userTOKENvalue0123456789"  # a PAT: GET /user answers "octocat"
NO_CHECKS_TOKEN = "ghs_nochecksTOKEN0123456789"  # an installation token without `checks: write`
READ_ONLY_TOKEN = "ghs_readonlyTOKEN0123456789"  # a fork's or Dependabot's token

TOKENS = {
    ACTIONS_TOKEN: Token("github-actions[bot]", installation=True),
    USER_TOKEN: Token("octocat"),
    NO_CHECKS_TOKEN: Token("github-actions[bot]", installation=True, checks_write=False),
    READ_ONLY_TOKEN: Token("github-actions[bot]", installation=True, read_only=True),
}


def client(fake: FakeGitHub, token: str = ACTIONS_TOKEN, **kwargs: object) -> Github:
    """A client with no pauses between requests (tests), otherwise as the Action builds it."""
    options: dict = {
        "seconds_between_requests": 0,
        "seconds_between_writes": 0,
        "backoff_factor": 0,
        "max_rate_limit_wait": 5,
    } | kwargs
    return make_github(token, api_url=fake.base_url, **options)


def running_fake() -> Iterator[FakeGitHub]:
    """The fake with `acme/agent` and PR #1 (head `feature` at HEAD_SHA); fails the test on a route error."""
    with FakeGitHub(tokens=dict(TOKENS)) as fake:
        fake.state.add_repo(REPO, sha=BASE_SHA)
        fake.state.add_pull(fake.base_url, REPO, head="feature", head_sha=HEAD_SHA, base_sha=BASE_SHA)
        yield fake
    assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"
