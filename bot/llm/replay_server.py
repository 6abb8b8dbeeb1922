"""The shipped OpenAI-compatible server that answers from a replay file (bot.llm.replay): stdlib http.server on
127.0.0.1, in a daemon thread.

Two ways in, one code path: `llm.base_url: replay:FILE` (or SQLCANARY_LLM_BASE_URL=replay:FILE) makes the
LLMClient start one here, in-process, and hand its http:// address to the real `openai` client, so retries,
response formats, JSON parsing, budgets and usage all run exactly as against a hosted model; `sqlcanary llm
serve --replay FILE` starts the same server for other processes (a `command:` agent, the Docker action) and
prints its base URL. Routes: POST /v1/chat/completions, GET /v1/models."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from bot.base.errors import ConfigError
from bot.config.llm import ENV_BASE_URL, replay_file
from bot.llm.replay import Answer, Replay, load_replay

MODEL_ID = "replay"


def completion_body(content: str, *, model: str) -> dict[str, Any]:
    """A chat.completion with usage estimated at ~4 characters a token (budgets and reports count them)."""
    return {
        "id": "chatcmpl-replay",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": 0,
            "completion_tokens": max(1, len(content) // 4),
            "total_tokens": max(1, len(content) // 4),
        },
    }


def error_body(status: int, message: str, *, code: str = "replay_error") -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "code": code}}


class ChatServer:
    """An OpenAI-compatible server on `host:port` (0: a free port) in a daemon thread; `respond(request, path,
    headers)` gives each chat completion's (status, JSON body). `with Server(...) as srv: srv.base_url`."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="sqlcanary-llm-server", daemon=True
        )

    def start(self) -> Self:
        self._thread.start()
        return self

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait(self) -> None:
        """Block until the server is closed (or Ctrl-C)."""
        self._thread.join()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def respond(self, request: dict, path: str, headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        raise NotImplementedError


class ReplayServer(ChatServer):
    """Answers from a replay file; `on_answer` sees each answer (`llm serve` prints it)."""

    def __init__(
        self,
        replay: Replay,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_answer: Callable[[Answer], None] | None = None,
    ) -> None:
        self.replay = replay
        self._on_answer = on_answer
        super().__init__(host=host, port=port)

    def respond(self, request: dict, path: str, headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        answer = self.replay.answer(request)
        if self._on_answer is not None:
            self._on_answer(answer)
        if answer.status != 200:
            code = "replay_no_match" if answer.line is None else "replay_error"
            return answer.status, error_body(answer.status, answer.message, code=code)
        return 200, completion_body(answer.content, model=str(request.get("model") or MODEL_ID))


def _handler(owner: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # answers are reported through on_answer
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.split("?")[0].rstrip("/").endswith("/models"):
                models = [{"id": MODEL_ID, "object": "model", "owned_by": "sqlcanary"}]
                self._send(200, {"object": "list", "data": models})
            else:
                self._send(404, error_body(404, f"no route {self.path}"))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
                self._send(
                    404, error_body(404, f"no route {self.path}: the replay server answers chat completions")
                )
                return
            try:
                doc = json.loads(raw or b"null")
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                self._send(400, error_body(400, "the request body is not a JSON object"))
                return
            self._send(*owner.respond(doc, self.path, dict(self.headers.items())))

    return Handler


# ---- in-process servers for `replay:FILE` base URLs ---------------------------------------------------------
_RUNNING: dict[str, ReplayServer] = {}
_LOCK = threading.Lock()


def in_process(file: str) -> ReplayServer:
    """The server for this replay file in this process, started on first use (clients of one run share it, and
    its `times` counts); a file changed since is read again. A bad file raises ConfigError naming file:line."""
    path = Path(file)
    stat = path.stat() if path.is_file() else None
    key = f"{path.resolve()}:{stat.st_mtime_ns}:{stat.st_size}" if stat else str(path.resolve())
    with _LOCK:
        server = _RUNNING.get(key)
        if server is None:
            server = _RUNNING[key] = ReplayServer(load_replay(file)).start()
        return server


def replay_base_url(base_url: str | None) -> str | None:
    """`base_url` as the openai client should get it: a `replay:FILE` one becomes the address of this process's
    replay server for FILE (started on first use); any other is returned as it is."""
    file = replay_file(base_url)
    if file is None:
        return base_url
    if not file:
        raise ConfigError(
            f"llm.base_url (or {ENV_BASE_URL}) `replay:` needs a file: replay:path/to/replies.yml"
        )
    return in_process(file).base_url


def stop_all() -> None:
    """Stop every in-process server (tests that load a changed file under the same path)."""
    with _LOCK:
        for server in _RUNNING.values():
            server.close()
        _RUNNING.clear()
