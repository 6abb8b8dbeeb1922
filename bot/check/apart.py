"""Work on the head done in a child process of its own, as each side's run is (bot.check.child): attribution
(bot.check.causes_child) and the Action's repair loop (bot.check.repair_child). The process that calls them holds
the GitHub token; the child never does.

Both ways are data, never code: the request is a pydantic model written as JSON to a file of a fresh 0700 folder
(this user's alone), which the child reads and validates before it starts any agent; the reply is JSON the child
writes there, which this process reads back size-bounded, validates against its model, and masks of this
process's secrets (bot.base.resultfiles). A reply that is missing, too large or not valid is a bug (exit 3)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from bot.base.errors import EXIT_BUG, EXIT_INTERRUPTED, EXIT_OK, ConfigError, error_boundary
from bot.base.resultfiles import ResultFiles
from bot.base.results import write_json_atomic
from bot.base.selfchild import self_argv, wait_child
from bot.base.settings import Settings

Req = TypeVar("Req", bound=BaseModel)
Reply = TypeVar("Reply", bound=BaseModel)
_REQUEST, _REPLY = "request.json", "reply.json"


def run_apart(
    module: str,
    request: BaseModel,
    reply_model: type[Reply],
    *,
    env: Mapping[str, str],
    cwd: Path,
    settings: Settings,
    max_bytes: int,
    what: str,
) -> Reply:
    """`main` of `module` in a child with exactly `env`, given `request`; its reply, read back as data."""
    with tempfile.TemporaryDirectory(prefix="sqlcanary-apart-") as private:  # mode 0700
        folder = Path(private)
        (folder / _REQUEST).write_text(request.model_dump_json(), encoding="utf-8")
        argv = self_argv(module, str(folder / _REQUEST), str(folder / _REPLY))
        proc = subprocess.Popen(
            argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        rc = wait_child(proc)
        if rc == EXIT_INTERRUPTED:
            raise KeyboardInterrupt
        if rc != EXIT_OK or not (folder / _REPLY).is_file():
            raise ConfigError(f"{what} failed with exit code {rc}; the error is printed above")
        reply = read_reply(folder / _REPLY, reply_model, max_bytes=max_bytes)
        return ResultFiles(folder, settings.secrets).model(_REPLY, reply)


def read_reply(path: Path, model: type[Reply], *, max_bytes: int) -> Reply:
    """A child's reply, validated; one over `max_bytes` or not valid is a bug (exit 3)."""
    with path.open("rb") as fh:
        raw = fh.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise _Unreadable(f"{path}: over {max_bytes} bytes")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise _Unreadable(f"{path}: {exc.errors()[0]['msg']}") from exc


class _Unreadable(ConfigError):
    exit_code = EXIT_BUG


def serve_apart(
    argv: Sequence[str],
    model: type[Req],
    work: Callable[[Req, Settings], BaseModel],
    environ: Mapping[str, str],
) -> int:
    """The child's side (its `main`): the request in `argv[0]`, validated, given to `work` with the settings of
    `environ`; its reply written to `argv[1]`."""
    request, out = Path(argv[0]), Path(argv[1])
    code = [EXIT_OK]
    with error_boundary(code):
        req = model.model_validate_json(request.read_bytes())
        reply = work(req, Settings.from_environ(environ))
        write_json_atomic(out, reply.model_dump_json() + "\n")
    return code[0]
