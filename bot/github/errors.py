"""Errors of the GitHub adapter: known failures (exit code 2) with a message that names the request."""

from __future__ import annotations

from github import GithubException
from requests import RequestException

from bot.base.errors import SqlcanaryError


class GitHubApiError(SqlcanaryError):
    """A GitHub API request failed in a way the bot cannot work around (bad token, missing repository, 5xx)."""

    @classmethod
    def from_exception(cls, request: str, exc: GithubException) -> GitHubApiError:
        message = (
            exc.message or (exc.data.get("message") if isinstance(exc.data, dict) else None) or str(exc.data)
        )
        return cls(f"GitHub API {request} failed: HTTP {exc.status}: {message}")

    @classmethod
    def from_transport(cls, request: str, exc: RequestException) -> GitHubApiError:
        """The API could not be reached, or kept failing after the retries (connection refused, timeouts)."""
        return cls(f"GitHub API {request} failed: {type(exc).__name__}: {exc}")


API_ERRORS = (GithubException, RequestException)


def api_error(request: str, exc: Exception) -> GitHubApiError:
    """The known failure for an exception from PyGithub or the HTTP layer under it."""
    if isinstance(exc, GithubException):
        return GitHubApiError.from_exception(request, exc)
    if isinstance(exc, RequestException):
        return GitHubApiError.from_transport(request, exc)
    raise TypeError(f"not an API error: {exc!r}")


class EventPayloadError(SqlcanaryError):
    """The workflow event payload (GITHUB_EVENT_PATH) is missing, unreadable or lacks a field the bot needs."""
