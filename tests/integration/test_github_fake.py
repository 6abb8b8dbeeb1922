"""The fake GitHub itself, and the client's retries against it: validation against the OpenAPI description,
failures on demand, caller identity by token, and the state a later repair pull request needs."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from github import RateLimitExceededException

from bot.github.client import get_repository, make_github, resolve_login
from bot.github.comment import upsert_sticky_comment
from bot.github.errors import GitHubApiError
from tests.support.fake_github import FakeGitHub, Token
from tests.support.github_fixtures import (
    ACTIONS_TOKEN,
    BASE_SHA,
    HEAD_SHA,
    REPO,
    USER_TOKEN,
    client,
    running_fake,
)


@pytest.fixture
def fake_github():
    yield from running_fake()


def _raw(
    fake: FakeGitHub, method: str, path: str, body: object = None, token: str = ACTIONS_TOKEN
) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        fake.base_url + path, data=data, method=method, headers={"Authorization": f"token {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_an_unknown_route_is_answered_404_and_recorded_as_an_error():
    with FakeGitHub(tokens={ACTIONS_TOKEN: Token("x")}) as fake:
        status, _ = _raw(fake, "GET", "/repos/acme/agent/issues/1")  # not in the trimmed description
        assert status == 404
        assert fake.errors == [
            "unknown route GET /repos/acme/agent/issues/1 (not in the OpenAPI description)"
        ]


def test_bad_bodies_and_parameters_get_422_with_the_validators_message(fake_github):
    status, body = _raw(fake_github, "POST", f"/repos/{REPO}/statuses/{HEAD_SHA}", {"state": "green"})
    assert status == 422 and "'green' is not one of" in body["message"]
    status, body = _raw(
        fake_github,
        "POST",
        f"/repos/{REPO}/statuses/{HEAD_SHA}",
        {"state": "success", "description": "d" * 141},
    )
    assert status == 422 and "description" in body["message"] and "too long" in body["message"]
    status, body = _raw(fake_github, "POST", f"/repos/{REPO}/issues/1/comments", {"text": "no body key"})
    assert status == 422 and "'body' is a required property" in body["message"]
    status, body = _raw(fake_github, "GET", f"/repos/{REPO}/issues/1/comments?per_page=lots")
    assert status == 422 and "query parameter 'per_page': 'lots' is not of type 'integer'" in body["message"]
    status, body = _raw(
        fake_github,
        "POST",
        f"/repos/{REPO}/check-runs",
        {"name": "c", "head_sha": HEAD_SHA, "started_at": "yesterday"},
    )
    assert status == 422 and "date-time" in body["message"]
    assert fake_github.state.repo(REPO).statuses == [] and fake_github.state.repo(REPO).check_runs == {}
    assert all(r.status == 422 for r in fake_github.requests)


def test_unknown_and_missing_tokens_get_401(fake_github):
    assert _raw(fake_github, "GET", f"/repos/{REPO}", token="ghp_nope")[0] == 401
    with pytest.raises(GitHubApiError, match="token"):
        make_github("", api_url=fake_github.base_url)


def test_get_user_names_a_personal_token_and_refuses_an_installation_token(fake_github):
    assert resolve_login(client(fake_github, USER_TOKEN)) == "octocat"
    assert resolve_login(client(fake_github, ACTIONS_TOKEN)) == "github-actions[bot]"
    assert [r.status for r in fake_github.calls("users/get-authenticated")] == [200, 403]


def test_a_429_with_retry_after_is_retried(fake_github):
    fake_github.fail("issues/create-comment", 429, headers={"Retry-After": "0"})
    repo = get_repository(client(fake_github), REPO)
    assert upsert_sticky_comment(repo, 1, "hi", marker="<!-- m -->", author_login="x").action == "created"
    assert [r.status for r in fake_github.calls("issues/create-comment")] == [429, 201]
    assert len(fake_github.state.repo(REPO).comments) == 1


def test_a_secondary_rate_limit_403_with_retry_after_is_retried_not_taken_for_a_permission_problem(
    fake_github,
):
    fake_github.fail(
        "checks/create",
        403,
        message="You have exceeded a secondary rate limit.",
        headers={"Retry-After": "0"},
    )
    repo = get_repository(client(fake_github), REPO)
    run = repo.create_check_run("c", HEAD_SHA, conclusion="success", output={"title": "t", "summary": "s"})
    assert run.conclusion == "success"
    assert [r.status for r in fake_github.calls("checks/create")] == [403, 201]


def test_a_retry_after_beyond_the_cap_fails_at_once_instead_of_sleeping(fake_github):
    fake_github.fail("issues/list-comments", 429, headers={"Retry-After": "3600"}, times=None)
    repo = get_repository(client(fake_github, max_rate_limit_wait=5), REPO)
    with pytest.raises(
        GitHubApiError, match="HTTP 429: Retry-After 3600s exceeds max_rate_limit_wait 5s"
    ) as raised:
        upsert_sticky_comment(repo, 1, "hi", marker="<!-- m -->", author_login="x")
    assert isinstance(raised.value.__cause__, RateLimitExceededException)
    assert len(fake_github.calls("issues/list-comments")) == 1


def test_server_errors_are_retried_a_bounded_number_of_times(fake_github):
    fake_github.fail("issues/list-comments", 502, times=2)
    repo = get_repository(client(fake_github, retries=3), REPO)
    assert upsert_sticky_comment(repo, 1, "hi", marker="<!-- m -->", author_login="x").action == "created"
    assert [r.status for r in fake_github.calls("issues/list-comments")] == [502, 502, 200]

    fake_github.fail("issues/list-comments", 503, times=None)
    with pytest.raises(GitHubApiError, match="HTTP 503: Server Error"):
        upsert_sticky_comment(repo, 1, "hi", marker="<!-- m -->", author_login="x")
    assert len(fake_github.calls("issues/list-comments")) == 3 + 4  # first try + 3 retries


def test_fail_refuses_an_operation_the_description_does_not_hold(fake_github):
    with pytest.raises(ValueError, match="operationId"):
        fake_github.fail("issues/get", 500)


def test_branches_pull_requests_and_labels_for_a_repair_pull_request(fake_github):
    repo = get_repository(client(fake_github), REPO)
    ref = repo.create_git_ref("refs/heads/sqlcanary/repair/pr-1", HEAD_SHA)
    assert repo.get_branch("sqlcanary/repair/pr-1").commit.sha == HEAD_SHA
    pull = repo.create_pull(
        base="feature", head="sqlcanary/repair/pr-1", title="Repair #1", body="b", draft=True
    )
    assert pull.number == 2 and pull.draft and pull.html_url.startswith(fake_github.base_url)

    found = list(repo.get_pulls(state="open", head="acme:sqlcanary/repair/pr-1"))
    assert [p.number for p in found] == [2]
    # not repo.get_git_ref(...).edit(): a lazy client PATCHes /git/ref/... (singular), which GitHub answers 404
    ref.edit("c" * 40, force=True)
    assert repo.get_pull(2).head.sha == "c" * 40
    pull.edit(body="updated", state="closed")
    assert fake_github.state.repo(REPO).pulls[2]["state"] == "closed"
    assert list(repo.get_pulls(state="open", head="acme:sqlcanary/repair/pr-1")) == []

    repo.create_label("sqlcanary", "0e8a16", "opened by sqlcanary")
    pull.add_to_labels("sqlcanary")
    assert [label.name for label in pull.get_labels()] == ["sqlcanary"]
    assert repo.get_branch("main").commit.sha == BASE_SHA
