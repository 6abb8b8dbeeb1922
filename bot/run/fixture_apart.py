"""Fixtures loaded apart: when sqlcanary is root, a fixture is sent to PostgreSQL by a process of a fresh
unprivileged user, never by root.

A fixture is the suite's, and in a check the suite is the pull request's: untrusted SQL. bot.db.fixture_load runs
it as the restricted role, with no client that runs meta-commands or programs; this module takes root out of it
too. The loader is a child of this sqlcanary (Python's `-P`, nothing of the tree imported) started as a user of
its own (bot.agents.sandbox: its own uid, `no_new_privs`, killed with all it started), with PATH alone in its
environment. It is given, on its stdin, the fixture's bytes (as the suite's loader read them,
bot.base.fixture_files) and a DSN that reaches the one database being loaded as the restricted role: for the
embedded server, whose socket is root's, through a `Door` (bot.db.door) that admits only that role into only
that database. It answers on its stdout, as data: its uid, and the fixture's error (file, line) if any.

Not root, or when the sandbox's user cannot start this Python (a dev container's 0700 /root): loaded here, as
before, and said once.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from psycopg2.extensions import make_dsn, parse_dsn

from bot.agents.sandbox import Sandbox, open_sandbox
from bot.base.childenv import allow_listed
from bot.base.errors import EXIT_BUG, EXIT_OK, CaseFileError, DatabaseError, error_boundary
from bot.base.fixture_files import FixtureFile
from bot.base.frozen import FrozenModel
from bot.base.selfchild import exchange, self_argv
from bot.db.door import Door
from bot.db.fixture_load import LOAD_BUDGET_S, load_fixture
from bot.db.provision import Server, socket_files
from bot.db.role import RUNNER_ROLE
from bot.db.templates import load_here

MAX_REPLY = 64 * 1024
_GRACE_S = 60.0  # past the load's own budget, which cancels its statement itself
_SAID: list[str] = []


class FileText(FrozenModel):
    path: str
    text: str


class LoadRequest(FrozenModel):
    dsn: str
    db_label: str
    budget_s: float
    files: tuple[FileText, ...]


class LoadReply(FrozenModel):
    """What the loader says: the user it ran as (said, never relied on) and the fixture's error, if any."""

    uid: int
    message: str | None = None
    path: str | None = None
    line: int | None = None


def load_apart(
    server: Server, dbname: str, password: str, files: tuple[FixtureFile, ...], *, db_label: str
) -> None:
    """A bot.db.templates.FixtureLoader: the fixture loaded by a fresh unprivileged user (see the module)."""
    loaded_as(server, dbname, password, files, db_label=db_label)


def loaded_as(
    server: Server, dbname: str, password: str, files: tuple[FixtureFile, ...], *, db_label: str
) -> int | None:
    """load_apart, saying the user id the loader ran as (None: loaded by this process)."""
    sandbox = open_sandbox()
    if sandbox is None:
        load_here(server, dbname, password, files, db_label=db_label)
        return None
    try:
        if not sandbox.reaches_sqlcanary():
            _say_once("the fixture is loaded by this process: the sandbox's user cannot start this Python")
            load_here(server, dbname, password, files, db_label=db_label)
            return None
        request = LoadRequest(
            dsn="",
            db_label=db_label,
            budget_s=LOAD_BUDGET_S,
            files=tuple(FileText(path=str(f.path), text=f.text()) for f in files),
        )
        with _reach(server, dbname, password, sandbox) as dsn:
            reply = _run(sandbox, request.model_copy(update={"dsn": dsn}))
    finally:
        sandbox.close()
    if reply.message is not None:
        raise CaseFileError(reply.message, path=reply.path, line=reply.line)
    return reply.uid


@contextlib.contextmanager
def _reach(server: Server, dbname: str, password: str, sandbox: Sandbox) -> Iterator[str]:
    """The DSN the loader connects with: through a Door when the server is reached by a Unix socket (the
    embedded one's is root's alone), else the restricted role's own DSN."""
    sockets = socket_files(server.admin_dsn)
    if not sockets:
        params = parse_dsn(server.admin_dsn)
        params.update(user=RUNNER_ROLE, password=password, dbname=dbname)
        yield make_dsn(**params)
        return
    parent = sandbox.home.parent  # root's, searchable by the sandbox's user (bot.agents.sandbox)
    with Door(sockets[0], uid=sandbox.uid, user=RUNNER_ROLE, dbname=dbname, parent=parent) as door:
        yield make_dsn(door.dsn, password=password)


def _run(sandbox: Sandbox, request: LoadRequest) -> LoadReply:
    argv = self_argv("bot.run.fixture_apart")
    with tempfile.TemporaryFile() as err:
        proc = sandbox.popen(
            argv,
            cwd="/",
            env=allow_listed(None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        data = request.model_dump_json().encode()
        out, rc, _ = exchange(proc, data, limit=MAX_REPLY, timeout_s=request.budget_s + _GRACE_S)
        err.seek(0)
        said = err.read(8_000).decode("utf-8", "replace").strip()
    if rc == EXIT_OK and len(out) <= MAX_REPLY:
        return LoadReply.model_validate_json(out)
    failed = f"loading the fixture of database {request.db_label!r} apart failed (exit code {rc}): {said}"
    if rc == EXIT_BUG:
        raise RuntimeError(failed)
    raise DatabaseError(failed)


def _say_once(text: str) -> None:
    if text not in _SAID:
        _SAID.append(text)
        print(f"sqlcanary: {text}", file=sys.stderr)


def main(argv: list[str]) -> int:
    """The loader's entry (bot.base.selfchild): a LoadRequest on stdin, a LoadReply on stdout."""
    code = [EXIT_OK]
    with error_boundary(code):
        req = LoadRequest.model_validate_json(sys.stdin.buffer.read())
        files = tuple(FixtureFile(Path(f.path), f.text.encode("utf-8")) for f in req.files)
        reply = LoadReply(uid=os.geteuid())
        try:
            load_fixture(req.dsn, files, db_label=req.db_label, budget_s=req.budget_s)
        except CaseFileError as exc:
            reply = LoadReply(uid=reply.uid, message=exc.message, path=exc.path, line=exc.line)
        sys.stdout.write(reply.model_dump_json())
    return code[0]
