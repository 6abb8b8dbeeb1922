"""Recording a replay file (`llm serve --record FILE --upstream URL`): a proxy in front of a model writes each
reply as an entry matched by kind, case and attempt; replaying the file answers the same requests the same way,
and the key the caller sent reaches the model but never the file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.config.llm import LLMSettings
from bot.llm import LLMClient
from bot.llm.replay import load_replay
from bot.llm.replay_record import RecordingServer
from bot.llm.replay_server import ChatServer, completion_body
from bot.repair.prompts import case_messages
from tests.unit.test_replay import failure

KEY = "sk-recording-test-key-1234"
PLAN_SCHEMA = {"type": "object", "required": ["status", "actions"]}


class Model(ChatServer):
    """A stand-in for a real model: answers each request with a numbered plan and keeps the headers it got."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        super().__init__()

    def respond(self, request: dict, path: str, headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        self.seen.append({k.lower(): v for k, v in headers.items()})
        plan = {"status": "updated", "actions": [], "n": len(self.seen)}
        return 200, completion_body(json.dumps(plan), model=str(request.get("model")))


def ask(client: LLMClient, case_id: str, feedback: list[str]) -> dict:
    messages = case_messages(failure(case_id), globs=["kb/**"], files=[], feedback=feedback, secrets=())
    return client.complete_json(messages, schema=PLAN_SCHEMA).data


def test_a_recorded_session_replays_the_same_answers_without_the_key(tmp_path: Path):
    recording = tmp_path / "recorded.yml"
    with Model() as model, RecordingServer(recording, model.base_url) as proxy:
        live = LLMClient(
            LLMSettings(base_url=proxy.base_url, model="m", cache=False), environ={"OPENAI_API_KEY": KEY}
        )
        asked = [ask(live, "a", []), ask(live, "a", ["refused"]), ask(live, "b", [])]
    assert [a["n"] for a in asked] == [1, 2, 3]
    assert all(seen["authorization"] == f"Bearer {KEY}" for seen in model.seen)
    text = recording.read_text()
    assert KEY not in text and text.startswith("# Recorded by `sqlcanary llm serve --record`")

    replay = load_replay(recording)
    assert [(e.kind, e.case, e.attempt, e.times) for e in replay.entries] == [
        ("repair", "a", 1, 1),
        ("repair", "a", 2, 1),
        ("repair", "b", 1, 1),
    ]
    offline = LLMClient(LLMSettings(base_url=f"replay:{recording}", model="m"), environ={})
    again = [ask(offline, "b", []), ask(offline, "a", ["refused"]), ask(offline, "a", [])]
    assert again == [asked[2], asked[1], asked[0]]  # matched by case and attempt, not by order
