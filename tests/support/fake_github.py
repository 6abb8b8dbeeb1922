"""A local GitHub REST server for tests: stdlib http.server in a thread on 127.0.0.1 and a free port.

    with FakeGitHub(tokens={"ghs_x": Token("github-actions[bot]", installation=True)}) as gh:
        gh.state.add_repo("acme/agent")
        gh.state.add_pull(gh.base_url, "acme/agent", head="feature", head_sha="a" * 40)
        client = make_github("ghs_x", api_url=gh.base_url, ...)

- Every request is routed and validated against GitHub's OpenAPI description (tests/support/fake_github_spec.py):
  an invalid body or parameter gets GitHub's 422 "Invalid request." with the validator's messages; a route the
  description does not hold, or one the fake does not implement, is answered 404/501 AND recorded in `errors`
  (the `fake_github` fixture fails the test on teardown when `errors` is not empty).
- The caller is identified by its token (`tokens`: token -> `Token`): an unknown token gets 401; an installation
  token (GITHUB_TOKEN) gets 403 on GET /user as on real GitHub; `checks_write=False` answers 403 to check-run
  writes; `read_only=True` answers 403 to every write.
- `fail(operation_id, status, ...)` makes the next `times` calls of an operation fail (403, 429 with Retry-After,
  secondary rate limits, 5xx).
- `requests` records method, path, query, headers (less Authorization), JSON body, status and caller login."""

from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support import (  # noqa: F401  (they register their handlers)
    fake_github_git,
    fake_github_git_objects,
    fake_github_repo_ops,
)
from tests.support.fake_github_spec import OpenApiSpec
from tests.support.fake_github_state import HANDLERS, Answer, Call, FakeState, error

NOT_ACCESSIBLE = "Resource not accessible by integration"
_SPEC: OpenApiSpec | None = None


def spec() -> OpenApiSpec:
    """The description is parsed once per test session (it is 0.5 MB)."""
    global _SPEC
    if _SPEC is None:
        _SPEC = OpenApiSpec()
    return _SPEC


@dataclass(frozen=True)
class Token:
    login: str
    installation: bool = False  # GITHUB_TOKEN / app installation: GET /user answers 403
    checks_write: bool = True
    read_only: bool = False


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw_body: str
    status: int
    login: str
    operation: str

    @property
    def is_write(self) -> bool:
        return self.method != "GET"


@dataclass
class _Failure:
    operation: str
    status: int
    message: str
    headers: dict[str, str]
    times: int | None  # None: every call


@dataclass
class FakeGitHub:
    tokens: dict[str, Token] = field(default_factory=lambda: {"ghp_test": Token("octocat")})
    state: FakeState = field(default_factory=FakeState)
    requests: list[Recorded] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _failures: list[_Failure] = field(default_factory=list)
    bind: str = "127.0.0.1"  # another of this machine's addresses: a docker network's gateway (act services)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((self.bind, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ---- test controls -------------------------------------------------------------------------------------
    def fail(
        self,
        operation: str,
        status: int,
        *,
        message: str = "",
        headers: dict[str, str] | None = None,
        times: int | None = 1,
    ) -> None:
        """Answer the next `times` calls of `operation` (an operationId) with `status` (None: all of them)."""
        if operation not in spec().operation_ids:
            raise ValueError(f"unknown operationId {operation!r}")
        message = message or {403: NOT_ACCESSIBLE, 429: "You have exceeded a secondary rate limit."}.get(
            status, "Server Error"
        )
        self._failures.append(_Failure(operation, status, message, dict(headers or {}), times))

    def calls(self, operation: str) -> list[Recorded]:
        return [r for r in self.requests if r.operation == operation]

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.is_write]

    def leaks(self, secret: str) -> list[Recorded]:
        """Requests whose path, query, headers or body contain `secret` (Authorization is never recorded)."""
        return [r for r in self.requests if secret in f"{r.path}{r.query}{r.headers}{r.raw_body}"]

    # ---- request handling ----------------------------------------------------------------------------------
    def _take_failure(self, operation: str) -> Answer | None:
        for failure in self._failures:
            if failure.operation == operation and (failure.times is None or failure.times > 0):
                if failure.times is not None:
                    failure.times -= 1
                answer = error(failure.status, failure.message)
                return Answer(answer.status, answer.body, failure.headers)
        return None

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: str
    ) -> tuple[Answer, str, str]:
        """(answer, operationId, caller login) for one request; called under the lock."""
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path
        query = dict(urllib.parse.parse_qsl(parsed.query))
        token = _bearer(headers.get("authorization", ""))
        caller = self.tokens.get(token) if token else None
        if caller is None:
            return error(401, "Bad credentials" if token else "Requires authentication"), "", ""
        found = spec().route(method, path)
        if found is None:
            self.errors.append(f"unknown route {method} {path} (not in the OpenAPI description)")
            return error(404, "Not Found"), "", caller.login
        route, raw_params = found
        params = {k: urllib.parse.unquote(v) for k, v in raw_params.items()}
        try:
            body = json.loads(raw_body) if raw_body.strip() else None
        except json.JSONDecodeError as exc:
            return error(400, f"Problems parsing JSON: {exc}"), route.operation_id, caller.login
        op = route.operation_id
        problems = spec().validate(route, path_params=params, query=query, body=body)
        if problems:
            answer = error(422, "Invalid request.\n\n" + "\n".join(problems[:10]))
            return answer, op, caller.login
        refused = self._refuse(caller, method, op) or self._take_failure(op)
        if refused is not None:
            return refused, op, caller.login
        if op == "users/get-authenticated":
            return Answer(200, {"login": caller.login, "id": 1, "type": "User"}), op, caller.login
        handler = HANDLERS.get(op)
        if handler is None:
            self.errors.append(f"{method} {path}: operation {op} is in the description but not in the fake")
            return error(501, f"{op} is not implemented by the fake"), op, caller.login
        full_name = f"{params.get('owner')}/{params.get('repo')}".lower()
        if full_name not in self.state.repos:
            return error(404, "Not Found"), op, caller.login
        call = Call(self.base_url, caller.login, params, query, body)
        repo = self.state.repos[full_name]
        try:  # a repository backed by a bare git repository (fake_github_git.attach_git) reads its refs there
            fake_github_git.refresh(repo)
            answer = handler(self.state, repo, call)
            fake_github_git.persist(repo)
        except fake_github_git.GitFailed as exc:
            self.errors.append(f"{method} {path}: git failed in the fake: {exc}")
            return error(500, f"git failed in the fake: {exc}"), op, caller.login
        return answer, op, caller.login

    @staticmethod
    def _refuse(caller: Token, method: str, operation: str) -> Answer | None:
        if operation == "users/get-authenticated" and caller.installation:
            return error(403, NOT_ACCESSIBLE)
        if method != "GET" and caller.read_only:
            return error(403, NOT_ACCESSIBLE)
        if operation in ("checks/create", "checks/update") and not caller.checks_write:
            return error(403, NOT_ACCESSIBLE)
        return None


def _bearer(value: str) -> str:
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() in ("token", "bearer") else ""


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw_body = self.rfile.read(length).decode("utf-8") if length else ""
            headers = {k.lower(): v for k, v in self.headers.items()}
            with fake._lock:
                answer, operation, login = fake.handle(self.command, self.path, headers, raw_body)
                parsed = urllib.parse.urlsplit(self.path)
                try:
                    body = json.loads(raw_body) if raw_body.strip() else None
                except json.JSONDecodeError:
                    body = None
                fake.requests.append(
                    Recorded(
                        self.command,
                        parsed.path,
                        dict(urllib.parse.parse_qsl(parsed.query)),
                        {k: v for k, v in headers.items() if k not in ("authorization", "cookie")},
                        body,
                        raw_body,
                        answer.status,
                        login,
                        operation,
                    )
                )
            payload = b"" if answer.body is None else json.dumps(answer.body).encode()
            self.send_response(answer.status)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.send_header("X-GitHub-Request-Id", f"FAKE:{len(fake.requests)}")
            if answer.status != 204:
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if answer.status != 204:
                self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
