"""A git smart-HTTP server for tests: `git http-backend` behind stdlib http.server, on 127.0.0.1 and a free port.

It plays github.com's git side for a container that shares the host's network (act `--network host`): a checkout
whose `origin` is `http://127.0.0.1:PORT/acme/agent.git` fetches from it as a runner's checkout fetches from
`https://github.com/acme/agent`. With `token` set it answers 401 to a request that does not carry that token the
way actions/checkout sends it (HTTP basic, user `x-access-token`), as GitHub does for a private repository.

    with GitHttpServer(root, token="ghs_x") as git_server:   # root/acme/agent.git is a bare repository
        url = git_server.url("acme/agent")

`requests` records (method, path, authorized) for every request; never the header itself.
"""

from __future__ import annotations

import base64
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass(frozen=True)
class GitRequest:
    method: str
    path: str
    authorized: bool


@dataclass
class GitHttpServer:
    root: Path  # holds <owner>/<name>.git bare repositories
    token: str | None = None
    requests: list[GitRequest] = field(default_factory=list)
    bind: str = "127.0.0.1"  # another of this machine's addresses: a docker network's gateway (act services)

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer((self.bind, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def host(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def url(self, full_name: str) -> str:
        return f"http://{self.host}/{full_name}.git"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def authorized(self, header: str) -> bool:
        if self.token is None:
            return True
        expected = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "basic" and value.strip() == expected


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":  # git sends large bodies chunked
        chunks = []
        while size := int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
        handler.rfile.readline()
        return b"".join(chunks)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _handler_for(server: GitHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: the CGI's output is the whole answer

        def _serve(self) -> None:
            body = _read_body(self)
            path, _, query = self.path.partition("?")
            ok = server.authorized(self.headers.get("Authorization", ""))
            server.requests.append(GitRequest(self.command, path, ok))
            if not ok:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            env = {
                "GIT_PROJECT_ROOT": str(server.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "REMOTE_ADDR": "127.0.0.1",
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "PATH": "/usr/bin:/bin",
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            }
            done = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=120
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            headers = [line.split(":", 1) for line in head.decode("latin-1").split("\r\n") if ":" in line]
            status = next((v.strip().split()[0] for k, v in headers if k.lower() == "status"), "200")
            self.send_response(int(status) if done.returncode == 0 else 500)
            for key, value in headers:
                if key.lower() != "status":
                    self.send_header(key, value.strip())
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler
