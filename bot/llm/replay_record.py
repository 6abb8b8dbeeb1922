"""Recording a replay file from a real model: `sqlcanary llm serve --record FILE --upstream URL` is a proxy in
front of any OpenAI-compatible endpoint. Each chat completion is forwarded as it came (the caller's key in its
own headers: nothing is stored but the reply), and each successful reply is written to FILE as one entry,
matched by kind and case (or question) and attempt, `times: 1`, in the order the requests came: replaying the
file answers a repeated run as the model did. The file is rewritten after every reply, so a stopped session
keeps what it recorded."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from bot.llm.replay_request import RequestInfo, describe
from bot.llm.replay_server import ChatServer, error_body

HEADER = (
    "# Recorded by `sqlcanary llm serve --record` from {upstream}.\n"
    '# Replay it with llm.base_url: replay:{path} (the format: README, "Offline LLM").\n'
)
_FORWARDED = ("authorization", "api-key", "openai-organization", "openai-project")


def entry_for(info: RequestInfo, content: str) -> dict[str, Any]:
    """The replay entry that answers this request with `content` once."""
    entry: dict[str, Any] = {"kind": info.kind}
    if info.kind == "repair" and info.case:
        entry["case"] = info.case
    if info.question and info.kind in ("agent", "judge"):
        entry["question"] = info.question
    if info.kind in ("repair", "critique"):
        entry["attempt"] = info.attempt
    if info.reask:
        entry["reask"] = True
    entry["times"] = 1
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    entry["reply"] = data if isinstance(data, dict) else content
    return entry


class RecordingServer(ChatServer):
    def __init__(
        self,
        path: str | Path,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout_s: float = 600.0,
        on_record: Callable[[RequestInfo, int], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.upstream = upstream.rstrip("/")
        self.timeout_s = timeout_s
        self.entries: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._on_record = on_record
        super().__init__(host=host, port=port)

    def respond(self, request: dict, path: str, headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        query = path.split("?", 1)[1] if "?" in path else ""
        url = f"{self.upstream}/chat/completions" + (f"?{query}" if query else "")
        sent = {k: v for k, v in headers.items() if k.lower() in _FORWARDED}
        req = urllib.request.Request(
            url,
            data=json.dumps(request).encode(),
            headers={**sent, "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # the user's URL
                status, body = resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"null")
            except ValueError:
                return exc.code, error_body(exc.code, f"the upstream answered HTTP {exc.code}")
        except (urllib.error.URLError, TimeoutError, ValueError) as exc:
            return 502, error_body(502, f"the upstream {self.upstream} failed: {exc}")
        if status == 200 and isinstance(body, dict):
            self._record(describe(request), body)
        return status, body

    def _record(self, info: RequestInfo, body: dict[str, Any]) -> None:
        try:
            content = body["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            return
        with self._lock:
            self.entries.append(entry_for(info, content))
            text = HEADER.format(upstream=self.upstream, path=self.path) + yaml.safe_dump(
                {"replies": self.entries}, sort_keys=False, allow_unicode=True, width=110
            )
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(self.path)
            n = len(self.entries)
        if self._on_record is not None:
            self._on_record(info, n)
