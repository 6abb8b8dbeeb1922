"""The head's files, read apart: the pull request's `sqlcanary.yml` and suite are parsed by a child of this
sqlcanary that holds nothing, never by the check's own process (which holds the GitHub token, the LLM key and
the admin DSN).

The child runs as a fresh unprivileged user when sqlcanary is root (bot.agents.sandbox: its own uid, no
`no_new_privs` escape, killed with everything it started), with the allow-listed environment (no secret, no
DSN), in the head's folder, started with Python's `-P` (no module of the tree is imported). It is given paths on
its stdin and prints what it read as JSON. The parent reads that as data: at most MAX_OUTPUT bytes, within
READ_TIMEOUT_S, validated by the models below; the config's own folder and file are set by the parent, and the
head's config is then decided by the base's (bot.config.trusted) in the parent, so a reader that lies can only
describe a head, never change the rules it is judged by. When the sandbox's user cannot reach this Python or the
head's files (a dev container's 0700 /root), the child runs as the user, still holding nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import ValidationError

from bot.agents import reach
from bot.agents.sandbox import Sandbox, open_sandbox
from bot.base.childenv import allow_listed
from bot.base.errors import EXIT_BUG, EXIT_OK, CaseFileError, ConfigError, SqlcanaryError, error_boundary
from bot.base.results import FrozenModel
from bot.base.selfchild import exchange, self_argv
from bot.cases.loader import load_suite
from bot.cases.model import Suite
from bot.cases.suite_doc import SuiteDoc
from bot.check.head_agent_files import settle_agent_files
from bot.config.model import Config, load_config

MAX_OUTPUT = 256 * 1024 * 1024  # a suite of 100,000 cases is well below
READ_TIMEOUT_S = 300.0
_MAX_MESSAGE = 4_000


class ReadRequest(FrozenModel):
    """What the reader reads: the head's config file, and the suites the check may evaluate (the request's, the
    base config's as rebased into the head's tree); the suite the head's own config names is read too."""

    config_file: str | None
    suites: tuple[str, ...] = ()
    checkout: str | None = None  # the head's checkout: the files its agent names must be in it


class Problem(FrozenModel):
    """A SqlcanaryError raised while reading, as data (raised again in the parent)."""

    message: str
    path: str | None = None
    line: int | None = None
    case_id: str | None = None

    @classmethod
    def of(cls, exc: SqlcanaryError) -> Problem:
        return cls(message=exc.message, path=exc.path, line=exc.line, case_id=exc.case_id)


class HeadFiles(FrozenModel):
    """What the reader read: the head's own config (as JSON, or the problem with it) and each suite by its
    resolved path (or the problem with it); `uid`, the user it ran as (said, never relied on)."""

    config: dict | None = None
    config_problem: Problem | None = None
    suites: dict[str, SuiteDoc] = {}
    suite_problems: dict[str, Problem] = {}
    uid: int | None = None

    def own_config(self, config_file: Path) -> Config:
        """The head's own config, its folder and file set here: ConfigError for what is wrong in it."""
        if self.config_problem is not None:
            p = self.config_problem
            raise ConfigError(p.message, path=p.path or str(config_file), line=p.line, case_id=p.case_id)
        if self.config is None:
            raise ConfigError(
                "the head's config was not read (its reader said nothing of it)", path=str(config_file)
            )
        where = {"base_dir": str(config_file.parent.resolve()), "config_file": str(config_file.resolve())}
        try:
            return Config.model_validate({**self.config, **where})
        except ValidationError as exc:
            raise ConfigError(f"the head's config, as its reader gave it, is not valid: {exc}") from None

    def suite(self, location: str | Path) -> Suite:
        """The suite at `location` as the reader read it (the loader's error for what is wrong in it)."""
        key = str(Path(location).resolve())
        if key in self.suite_problems:
            p = self.suite_problems[key]
            raise CaseFileError(p.message, path=p.path or key, line=p.line, case_id=p.case_id)
        if key in self.suites:
            return self.suites[key].suite()
        if not Path(key).exists():
            raise CaseFileError("no such suite file or folder", path=str(location))
        raise RuntimeError(f"the head's suite {key} was never given to its reader")  # a bug of ours: exit 3


def read_files(req: ReadRequest) -> HeadFiles:
    """In the reader: the head's config, then every suite it may be evaluated with that exists."""
    config: Config | None = None
    out: dict = {"uid": os.geteuid() if hasattr(os, "geteuid") else None}
    if req.config_file:
        try:
            config = load_config(req.config_file)
            if req.checkout:  # the files the agent names, read here or kept in the checkout
                config = settle_agent_files(config, Path(req.checkout))
            out["config"] = config.model_dump(mode="json")
        except SqlcanaryError as exc:
            out["config_problem"] = Problem.of(exc)
    paths = [*req.suites, *([str(config.path(config.suite))] if config and config.suite else [])]
    suites, problems = {}, {}
    for path in dict.fromkeys(str(Path(p).resolve()) for p in paths):
        if not Path(path).exists():
            continue
        try:
            suites[path] = SuiteDoc.of(load_suite(path))
        except SqlcanaryError as exc:
            problems[path] = Problem.of(exc)
    return HeadFiles(**out, suites=suites, suite_problems=problems)


def main(argv: list[str]) -> int:
    """The reader's entry (bot.base.selfchild): a ReadRequest on stdin, HeadFiles on stdout. What goes wrong
    in reading the head's files is data (HeadFiles' problems); anything else is a bug of ours (exit 3)."""
    code = [EXIT_OK]
    with error_boundary(code):
        req = ReadRequest.model_validate_json(sys.stdin.buffer.read())
        sys.stdout.write(read_files(req).model_dump_json())
    return code[0]


def parse_output(out: bytes, rc: int, err: str, *, limit: int = MAX_OUTPUT) -> HeadFiles:
    """The reader's answer as data, or the error that says what went wrong with it."""
    if len(out) > limit:
        raise ConfigError(f"the head's files, as read apart, exceed {limit:,} bytes: they are not read")
    if rc != 0:
        said = err.strip()[-_MAX_MESSAGE:] or "nothing"
        failed = f"reading the head's config and suite failed (exit code {rc}): {said}"
        if rc == EXIT_BUG:
            raise RuntimeError(failed)  # a bug of ours, reported as one (exit 3)
        raise ConfigError(failed)
    try:
        return HeadFiles.model_validate_json(out)
    except ValidationError as exc:
        raise ConfigError(
            f"the head's files, as read apart, are not what sqlcanary reads: {exc}"[:_MAX_MESSAGE]
        ) from None


def _reachable(sandbox: Sandbox, cwd: Path, req: ReadRequest) -> bool:
    """Whether the sandbox's user can run this Python and this sqlcanary and read the head's files."""
    if not sandbox.reaches_sqlcanary():
        return False
    try:
        sandbox.check_reachable(cwd, what="the head's folder")
        for path in (req.config_file, *req.suites):
            if path and Path(path).exists():
                sandbox.check_reachable(Path(path), what="the head's file")
    except reach.Unreachable:
        return False
    return True


def _run(argv: list[str], cwd: Path, env: dict[str, str], data: bytes, sandbox: Sandbox | None) -> HeadFiles:
    with tempfile.TemporaryFile() as err:
        start = sandbox.popen if sandbox is not None else subprocess.Popen
        proc = start(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        out, rc, expired = exchange(proc, data, limit=MAX_OUTPUT, timeout_s=READ_TIMEOUT_S)
        if expired:
            raise ConfigError(
                f"reading the head's config and suite took over {READ_TIMEOUT_S:.0f} s: stopped"
            )
        err.seek(0)
        said = err.read(64_000).decode("utf-8", "replace")
    return parse_output(out, rc, said)


def read_head(
    req: ReadRequest, cwd: Path, environ: Mapping[str, str] | None, *, say: Callable[[str], None]
) -> HeadFiles:
    """The head's files, read by a child that holds nothing (see the module's docstring)."""
    data = req.model_dump_json().encode()
    argv = self_argv("bot.check.head_reader")
    env = allow_listed(environ)
    sandbox = open_sandbox()
    if sandbox is None:
        return _run(argv, cwd, env, data, None)
    try:
        if _reachable(sandbox, cwd, req):
            return _run(argv, cwd, env, data, sandbox)
    finally:
        sandbox.close()
    say("the head's files were read as this user, holding no secret: the sandbox's user cannot reach them")
    return _run(argv, cwd, env, data, None)
