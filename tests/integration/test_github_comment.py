"""The sticky comment through PyGithub against the fake GitHub (no PostgreSQL, no mocks of PyGithub)."""

from __future__ import annotations

import pytest

from bot.github.client import GITHUB_ACTIONS_LOGIN, get_repository, resolve_login
from bot.github.comment import MAX_COMMENT_CHARS, hidden_marker, upsert_sticky_comment
from bot.github.errors import GitHubApiError
from tests.support.fake_github import FakeGitHub
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, USER_TOKEN, client, running_fake

MARKER = hidden_marker("shop")


@pytest.fixture
def fake_github():
    yield from running_fake()


def _comments(fake: FakeGitHub) -> list[dict]:
    return list(fake.state.repo(REPO).comments.values())


def test_two_runs_leave_one_comment_edited_once_and_a_third_unchanged_run_sends_no_patch(fake_github):
    repo = get_repository(client(fake_github), REPO)
    login = resolve_login(client(fake_github))
    assert login == GITHUB_ACTIONS_LOGIN  # GET /user answered 403 to the installation token

    first = upsert_sticky_comment(repo, 1, f"{MARKER}\nrun 1", marker=MARKER, author_login=login)
    second = upsert_sticky_comment(repo, 1, f"{MARKER}\nrun 2", marker=MARKER, author_login=login)
    third = upsert_sticky_comment(repo, 1, f"{MARKER}\nrun 2", marker=MARKER, author_login=login)

    assert [first.action, second.action, third.action] == ["created", "updated", "unchanged"]
    assert first.comment_id == second.comment_id == third.comment_id
    assert [c["body"] for c in _comments(fake_github)] == [f"{MARKER}\nrun 2"]
    assert len(fake_github.calls("issues/create-comment")) == 1
    assert len(fake_github.calls("issues/update-comment")) == 1
    assert third.url.startswith(fake_github.base_url) and third.url.endswith(
        f"#issuecomment-{third.comment_id}"
    )


def test_a_comment_by_another_user_holding_the_marker_is_not_edited(fake_github):
    quoted = f"I copied your comment:\n{MARKER}\nold numbers"
    fake_github.state.add_comment(fake_github.base_url, REPO, 1, quoted, author="octocat")
    repo = get_repository(client(fake_github), REPO)

    result = upsert_sticky_comment(
        repo, 1, f"{MARKER}\nreport", marker=MARKER, author_login=GITHUB_ACTIONS_LOGIN
    )

    assert result.action == "created"
    assert fake_github.calls("issues/update-comment") == []
    bodies = {c["user"]["login"]: c["body"] for c in _comments(fake_github)}
    assert bodies == {"octocat": quoted, GITHUB_ACTIONS_LOGIN: f"{MARKER}\nreport"}


def test_own_comment_without_the_marker_and_another_suites_marker_are_left_alone(fake_github):
    other = hidden_marker("bird")
    for body in ("a plain comment by the bot", f"{other}\nbird report"):
        fake_github.state.add_comment(fake_github.base_url, REPO, 1, body, author=GITHUB_ACTIONS_LOGIN)
    repo = get_repository(client(fake_github), REPO)

    assert upsert_sticky_comment(
        repo, 1, "shop report", marker=MARKER, author_login=GITHUB_ACTIONS_LOGIN
    ).action == ("created")
    assert [c["body"] for c in _comments(fake_github)] == [
        "a plain comment by the bot",
        f"{other}\nbird report",
        f"{MARKER}\nshop report",  # marker put on top
    ]


def test_the_sticky_comment_is_found_past_the_first_page(fake_github):
    for i in range(45):
        fake_github.state.add_comment(fake_github.base_url, REPO, 1, f"chatter {i}", author="octocat")
    sticky = fake_github.state.add_comment(fake_github.base_url, REPO, 1, f"{MARKER}\nv1", author="octocat")
    repo = get_repository(client(fake_github, USER_TOKEN), REPO)
    login = resolve_login(client(fake_github, USER_TOKEN))

    result = upsert_sticky_comment(repo, 1, f"{MARKER}\nv2", marker=MARKER, author_login=login)

    assert (login, result.action, result.comment_id) == ("octocat", "updated", sticky["id"])
    assert len(fake_github.calls("issues/list-comments")) == 2  # followed the Link header to page 2


def test_a_body_over_the_limit_is_refused_before_any_request(fake_github):
    repo = get_repository(client(fake_github), REPO)
    body = MARKER + "x" * MAX_COMMENT_CHARS
    with pytest.raises(ValueError, match="truncate"):
        upsert_sticky_comment(repo, 1, body, marker=MARKER, author_login=GITHUB_ACTIONS_LOGIN)
    assert fake_github.requests == []
    exactly = MARKER + "x" * (MAX_COMMENT_CHARS - len(MARKER))
    assert (
        upsert_sticky_comment(repo, 1, exactly, marker=MARKER, author_login=GITHUB_ACTIONS_LOGIN).action
        == "created"
    )


def test_a_missing_pull_request_is_a_known_error_naming_it(fake_github):
    repo = get_repository(client(fake_github), REPO)
    with pytest.raises(GitHubApiError, match=r"#7.*HTTP 404"):
        upsert_sticky_comment(repo, 7, "x", marker=MARKER, author_login=GITHUB_ACTIONS_LOGIN)


def test_no_token_reaches_a_request_body_or_header(fake_github):
    repo = get_repository(client(fake_github), REPO)
    upsert_sticky_comment(repo, 1, "report", marker=MARKER, author_login=GITHUB_ACTIONS_LOGIN)
    assert fake_github.requests and fake_github.leaks(ACTIONS_TOKEN) == []
    assert all("authorization" not in r.headers for r in fake_github.requests)


@pytest.mark.parametrize("key", ["", "a b", "a--b", "x>", "<!--"])
def test_marker_keys_that_could_break_the_html_comment_are_refused(key):
    with pytest.raises(ValueError):
        hidden_marker(key)
