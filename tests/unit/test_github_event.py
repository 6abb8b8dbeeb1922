"""The event payload model: the fields the Action needs, fork and Dependabot detection, errors naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.base.errors import EXIT_BAD_INPUT
from bot.github.errors import EventPayloadError
from bot.github.event import load_event, parse_event

EVENTS = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "events"
HEAD, BASE = "a" * 40, "b" * 40


def _payload(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_a_same_repository_pull_request_is_trusted():
    event = load_event("pull_request", EVENTS / "pull_request_same_repo.json", sha="c" * 40)
    assert (event.repository, event.pr_number, event.head_sha, event.base_sha) == (
        "acme/agent",
        7,
        HEAD,
        BASE,
    )
    assert (event.head_repository, event.head_ref, event.ref) == (
        "acme/agent",
        "feature/kb-gmv",
        "refs/heads/main",
    )
    assert (event.actor, event.is_fork, event.is_dependabot, event.untrusted) == (
        "alice",
        False,
        False,
        False,
    )


def test_a_fork_pull_request_is_untrusted():
    event = parse_event("pull_request", _payload("pull_request_fork.json"))
    assert (event.head_repository, event.is_fork, event.untrusted) == ("mallory/agent", True, True)


def test_a_pull_request_whose_fork_was_deleted_is_untrusted():
    payload = _payload("pull_request_fork.json")
    payload["pull_request"]["head"]["repo"] = None
    event = parse_event("pull_request", payload)
    assert (event.head_repository, event.is_fork) == (None, True)


def test_a_dependabot_pull_request_is_untrusted_though_in_the_same_repository():
    event = parse_event("pull_request", _payload("pull_request_dependabot.json"))
    assert (event.is_fork, event.is_dependabot, event.untrusted) == (False, True, True)


def test_a_push_to_the_default_branch():
    event = parse_event("push", _payload("push_main.json"))
    assert (event.head_sha, event.base_sha, event.pr_number, event.on_default_branch) == (
        HEAD,
        BASE,
        None,
        True,
    )
    payload = _payload("push_main.json") | {"before": "0" * 40, "ref": "refs/heads/topic"}
    event = parse_event("push", payload)
    assert (event.base_sha, event.on_default_branch) == (None, False)


def test_workflow_dispatch_takes_its_sha_from_the_caller():
    event = parse_event("workflow_dispatch", _payload("workflow_dispatch.json"), sha=HEAD)
    assert (event.head_sha, event.ref, event.on_default_branch) == (HEAD, "refs/heads/main", True)


@pytest.mark.parametrize(
    ("event_name", "fixture", "mutate", "message"),
    [
        (
            "pull_request",
            "pull_request_same_repo.json",
            lambda p: p["pull_request"]["base"].pop("sha"),
            "pull_request event payload: missing field pull_request.base.sha",
        ),
        (
            "pull_request",
            "pull_request_same_repo.json",
            lambda p: p.pop("pull_request"),
            "missing field pull_request",
        ),
        (
            "pull_request",
            "pull_request_same_repo.json",
            lambda p: p["pull_request"]["head"].update(sha="main; rm"),
            "bad field (String should match pattern",
        ),
        (
            "push",
            "push_main.json",
            lambda p: p["repository"].pop("full_name"),
            "push event payload: missing field repository.full_name",
        ),
    ],
)
def test_a_malformed_payload_names_the_missing_field(event_name, fixture, mutate, message):
    payload = _payload(fixture)
    mutate(payload)
    with pytest.raises(EventPayloadError) as raised:
        parse_event(event_name, payload)
    assert message in str(raised.value) and raised.value.exit_code == EXIT_BAD_INPUT


def test_unsupported_events_and_unreadable_files_are_known_errors(tmp_path):
    with pytest.raises(EventPayloadError, match="unsupported event 'pull_request_target'"):
        parse_event("pull_request_target", _payload("pull_request_same_repo.json"))
    with pytest.raises(EventPayloadError, match="cannot read"):
        load_event("push", tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"ref": "x",\n oops}')
    with pytest.raises(EventPayloadError, match=r"bad\.json:2: event payload is not JSON"):
        load_event("push", tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(EventPayloadError, match="not a JSON object"):
        load_event("push", tmp_path / "list.json")
    with pytest.raises(EventPayloadError, match="deletes refs/heads/main"):
        parse_event("push", _payload("push_main.json") | {"deleted": True})
