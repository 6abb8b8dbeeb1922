"""The check run and its commit-status fallback through PyGithub against the fake GitHub."""

from __future__ import annotations

import pytest
from github import GithubException

from bot.github.checks import MAX_OUTPUT_CHARS, Annotation, publish_check_run
from bot.github.client import get_repository
from bot.github.errors import GitHubApiError
from tests.support.github_fixtures import (
    HEAD_SHA,
    NO_CHECKS_TOKEN,
    READ_ONLY_TOKEN,
    REPO,
    client,
    running_fake,
)

CASE_FILE = "benchmarks/shop/cases/traffic.yml"


@pytest.fixture
def fake_github():
    yield from running_fake()


def _annotations(count: int, path: str = CASE_FILE) -> list[Annotation]:
    return [
        Annotation(path, i + 1, i + 1, "failure", f"case c{i} regressed", title=f"c{i}") for i in range(count)
    ]


def test_120_annotations_arrive_in_three_requests_of_at_most_50_and_the_run_holds_all(fake_github):
    repo = get_repository(client(fake_github), REPO)

    published = publish_check_run(
        repo,
        name="sqlcanary / shop",
        head_sha=HEAD_SHA,
        conclusion="failure",
        title="2 regressions",
        summary="## summary",
        text="details",
        annotations=_annotations(120),
        repo_paths={CASE_FILE},
    )

    assert (published.via, published.annotations_sent, published.annotations_dropped) == ("check_run", 120, 0)
    writes = fake_github.writes()
    assert [(r.method, r.operation) for r in writes] == [
        ("POST", "checks/create"),
        ("PATCH", "checks/update"),
        ("PATCH", "checks/update"),
    ]
    assert [len(r.body["output"]["annotations"]) for r in writes] == [50, 50, 20]
    stored = fake_github.state.repo(REPO).annotations[published.check_run_id]
    assert [a["start_line"] for a in stored] == list(range(1, 121))
    run = fake_github.state.repo(REPO).check_runs[published.check_run_id]
    assert (run["status"], run["conclusion"], run["output"]["summary"]) == (
        "completed",
        "failure",
        "## summary",
    )
    # read back through PyGithub: the annotations endpoint pages them all
    fetched = repo.get_check_run(published.check_run_id).get_annotations()
    assert len(list(fetched)) == 120


def test_annotations_outside_the_repository_are_dropped(fake_github):
    repo = get_repository(client(fake_github), REPO)
    annotations = _annotations(3) + _annotations(2, "/tmp/x.yml") + _annotations(1, "./" + CASE_FILE)
    published = publish_check_run(
        repo,
        name="c",
        head_sha=HEAD_SHA,
        conclusion="success",
        title="ok",
        summary="s",
        annotations=annotations,
        repo_paths=[CASE_FILE],
    )
    assert (published.annotations_sent, published.annotations_dropped) == (4, 2)
    assert {a["path"] for a in fake_github.state.repo(REPO).annotations[published.check_run_id]} == {
        CASE_FILE
    }


def test_no_annotations_make_one_request_and_outputs_over_the_limit_are_cut_to_fit(fake_github):
    repo = get_repository(client(fake_github), REPO)
    published = publish_check_run(
        repo,
        name="c",
        head_sha=HEAD_SHA,
        conclusion="neutral",
        title="t" * 300,
        summary="s" * (MAX_OUTPUT_CHARS + 10),
        text="x" * 70_000,
    )
    assert published.via == "check_run" and len(fake_github.writes()) == 1
    output = fake_github.state.repo(REPO).check_runs[published.check_run_id]["output"]
    assert len(output["summary"]) == len(output["text"]) == MAX_OUTPUT_CHARS
    assert output["summary"].endswith("job summary and the artifacts)") and len(output["title"]) == 255


def test_a_403_on_check_runs_falls_back_to_a_commit_status_of_at_most_140_characters(fake_github):
    repo = get_repository(client(fake_github, NO_CHECKS_TOKEN), REPO)
    title = "3 regressions, 1 fix: " + "case dau-id-2025-11 regressed because " * 10

    published = publish_check_run(
        repo,
        name="sqlcanary / shop",
        head_sha=HEAD_SHA,
        conclusion="failure",
        title=title,
        summary="s",
        annotations=_annotations(60),
        repo_paths=[CASE_FILE],
        details_url="https://ci.example/run/1",
    )

    assert published.via == "commit_status" and "403" in published.detail
    [status] = fake_github.state.repo(REPO).statuses
    assert len(status["description"]) <= 140 and status["description"].startswith("3 regressions, 1 fix")
    assert (status["state"], status["context"], status["sha"]) == ("failure", "sqlcanary / shop", HEAD_SHA)
    assert status["target_url"] == "https://ci.example/run/1"
    assert [r.operation for r in fake_github.writes()] == ["checks/create", "repos/create-commit-status"]
    assert fake_github.state.repo(REPO).check_runs == {}


def test_when_statuses_are_refused_too_nothing_is_published_and_it_says_why(fake_github):
    repo = get_repository(client(fake_github, READ_ONLY_TOKEN), REPO)
    published = publish_check_run(
        repo, name="c", head_sha=HEAD_SHA, conclusion="success", title="ok", summary="s"
    )
    assert published.via == "none" and "job summary" in published.detail
    assert fake_github.state.repo(REPO).statuses == []


def test_other_errors_are_known_failures_not_fallbacks(fake_github):
    fake_github.fail("checks/create", 404, message="Not Found")
    repo = get_repository(client(fake_github), REPO)
    with pytest.raises(GitHubApiError, match=r"check run 'c'.*HTTP 404"):
        publish_check_run(repo, name="c", head_sha=HEAD_SHA, conclusion="success", title="ok", summary="s")
    assert fake_github.calls("repos/create-commit-status") == []


def test_the_fake_rejects_an_invalid_check_run_body_with_422(fake_github):
    repo = get_repository(client(fake_github), REPO)
    with pytest.raises(GithubException) as raised:
        repo.create_check_run("c", HEAD_SHA, conclusion="bogus", output={"title": "t", "summary": "s"})
    assert raised.value.status == 422 and "bogus" in raised.value.data["message"]
    with pytest.raises(GithubException) as raised:  # 51 annotations in one request
        repo.create_check_run(
            "c",
            HEAD_SHA,
            output={"title": "t", "summary": "s", "annotations": [a.to_api() for a in _annotations(51)]},
        )
    assert (
        raised.value.status == 422
        and "output/annotations: does not satisfy maxItems 50" in raised.value.data["message"]
    )
    assert fake_github.state.repo(REPO).check_runs == {}
