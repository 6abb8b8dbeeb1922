"""Building the PyGithub client and asking who it writes as.

Everything is a parameter (token, API URL, timeouts): only the Action's `main()` reads the environment, so these
functions work the same against api.github.com, a GitHub Enterprise Server and the tests' local fake."""

from __future__ import annotations

import logging
from typing import Any

from github import Auth, Github, GithubException, GithubRetry, RateLimitExceededException
from github.GithubException import RateLimitExceededExceedsMaxWait
from github.Repository import Repository

from bot.github.errors import API_ERRORS, GitHubApiError, api_error

# PyGithub logs every retried request at INFO to stderr, the expected 403 of GET /user for a GITHUB_TOKEN included;
# the action reports what matters itself.
logging.getLogger("github").setLevel(logging.WARNING)

DEFAULT_API_URL = "https://api.github.com"
# The login GITHUB_TOKEN writes as; GET /user answers 403 to that token, so it cannot be asked.
GITHUB_ACTIONS_LOGIN = "github-actions[bot]"
DEFAULT_SECONDARY_RATE_WAIT = 60.0


class CappedRetry(GithubRetry):
    """PyGithub's retry (5xx, rate-limit 403s) that also refuses a `Retry-After` longer than the cap.

    urllib3 sleeps whatever `Retry-After` says on a 429/503; a job should fail with a clear message instead of
    sleeping for an hour of its CI minutes."""

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        if (
            seconds is not None
            and self.max_rate_limit_wait is not None
            and seconds > self.max_rate_limit_wait
        ):
            raise RateLimitExceededExceedsMaxWait(
                response.status,
                {
                    "message": f"Retry-After {seconds:g}s exceeds max_rate_limit_wait {self.max_rate_limit_wait:g}s"
                },
                dict(response.headers),
                wait=seconds,
            )
        return seconds


def make_github(
    token: str,
    *,
    api_url: str = DEFAULT_API_URL,
    timeout: int = 15,
    retries: int = 5,
    backoff_factor: float = 0.5,
    max_rate_limit_wait: float = 120.0,
    seconds_between_requests: float | None = 0.25,
    seconds_between_writes: float | None = 1.0,
) -> Github:
    """A PyGithub client for `api_url` (GITHUB_API_URL: GHES works) with bounded retries and rate-limit waits.

    The client is lazy: `get_repo` and `get_issue` make no request, so a run sends only the calls it needs (and
    the trimmed OpenAPI description the tests validate against does not need GET /repos/{owner}/{repo}/issues/N).
    `seconds_between_*` are GitHub's advice against secondary rate limits; tests set them and the backoff to 0."""
    if not token:
        raise GitHubApiError("no GitHub token was given (input github-token)")
    retry = CappedRetry(
        total=retries,
        backoff_factor=backoff_factor,  # 5xx: sleep backoff_factor * 2**n between tries
        max_rate_limit_wait=max_rate_limit_wait,
        secondary_rate_wait=min(DEFAULT_SECONDARY_RATE_WAIT, max_rate_limit_wait),
        raise_on_status=False,  # after the last retry, hand GitHub's own answer (status, message) to PyGithub
    )
    return Github(
        auth=Auth.Token(token),
        base_url=api_url.rstrip("/"),
        timeout=timeout,
        retry=retry,
        seconds_between_requests=seconds_between_requests,
        seconds_between_writes=seconds_between_writes,
        lazy=True,
    )


def get_repository(github: Github, full_name: str) -> Repository:
    """The repository `owner/name`, without a request (the client is lazy)."""
    if full_name.count("/") != 1 or not all(full_name.split("/")):
        raise GitHubApiError(f"not a repository name (owner/name): {full_name!r}")
    return github.get_repo(full_name)


def resolve_login(github: Github) -> str:
    """The login the token writes comments as: GET /user, or `github-actions[bot]` when that answers 403.

    A GITHUB_TOKEN (an installation token) may not read /user; its comments are written by github-actions[bot].
    A rate-limit 403 is not that answer and is raised."""
    try:
        return github.get_user().login
    except API_ERRORS as exc:
        if (
            isinstance(exc, GithubException)
            and exc.status == 403
            and not isinstance(exc, RateLimitExceededException)
        ):
            return GITHUB_ACTIONS_LOGIN
        raise api_error("GET /user", exc) from exc
