"""A local OpenAI-compatible HTTP server for tests: stdlib http.server in a thread on 127.0.0.1:0.

    with FakeOpenAI(replies=['{"sql": "SELECT 1"}', Reply(status=429, headers={"Retry-After": "0"})]) as srv:
        client = LLMClient(LLMSettings(base_url=srv.base_url, ...))

`replies` is a queue (each request takes the next one; when it runs dry the last one repeats) or a function
(request_json) -> reply. A reply is a string (the assistant message content), a dict (a JSON body sent as is),
or a `Reply` (status, headers, delay, a raw body). Every request is recorded in `requests` (path, headers,
JSON body) so tests can assert on prompts. `GET /v1/models` lists one model."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    content: str | None = None  # the assistant message (a normal 200 completion)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: str | bytes | None = None  # raw body instead of a completion (malformed bodies, error documents)
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = (10, 5)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def messages(self) -> list[dict]:
        return (self.json or {}).get("messages", [])

    @property
    def prompt_text(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages)


Script = list[Any] | Callable[[dict], Any]


def completion(content: str, *, model: str, finish_reason: str = "stop", usage=(10, 5)) -> dict:
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        ],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def error_body(status: int, message: str) -> dict:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error" if status < 500 else "server_error",
            "code": str(status),
        }
    }


class FakeOpenAI:
    def __init__(self, replies: Script | None = None) -> None:
        self.requests: list[Recorded] = []
        self._script: Script = replies if replies is not None else ['{"ok": true}']
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    # ---- lifecycle -----------------------------------------------------------------------------------------
    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def completions(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def script(self, replies: Script) -> None:
        with self._lock:
            self._script = replies

    # ---- replies -------------------------------------------------------------------------------------------
    def _next(self, request: dict) -> Reply:
        with self._lock:
            if callable(self._script):
                item = self._script(request)
            elif len(self._script) > 1:
                item = self._script.pop(0)
            else:
                item = self._script[0] if self._script else ""
        if isinstance(item, Reply):
            return item
        if isinstance(item, dict):
            return Reply(body=json.dumps(item))
        return Reply(content=str(item))

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: str | bytes, headers: dict[str, str]) -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.requests.append(Recorded("GET", self.path, dict(self.headers), None))
                if self.path.rstrip("/").endswith("/models"):
                    body = {
                        "object": "list",
                        "data": [{"id": "fake-model", "object": "model", "owned_by": "me"}],
                    }
                    self._send(200, json.dumps(body), {})
                else:
                    self._send(404, json.dumps(error_body(404, "not found")), {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    doc = json.loads(raw or b"null")
                except ValueError:
                    doc = None
                fake.requests.append(Recorded("POST", self.path, dict(self.headers), doc))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, json.dumps(error_body(404, "not found")), {})
                    return
                reply = fake._next(doc if isinstance(doc, dict) else {})
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.body is not None:
                    self._send(reply.status, reply.body, reply.headers)
                elif reply.status != 200:
                    self._send(
                        reply.status,
                        json.dumps(error_body(reply.status, reply.content or "error")),
                        reply.headers,
                    )
                else:
                    model = (doc or {}).get("model", "fake-model")
                    body = completion(
                        reply.content or "", model=model, finish_reason=reply.finish_reason, usage=reply.usage
                    )
                    self._send(200, json.dumps(body), reply.headers)

        return Handler
