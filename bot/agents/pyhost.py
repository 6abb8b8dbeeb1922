"""The host process of a sandboxed `python:` agent, and the loader of a `python:` target.

This module imports the standard library only: the host is started as `python -c BOOT pyhost.py TARGET BASE_DIR`
(bot.agents.pyboxed) under the sandbox's user id, loads this file by its path, and so runs nothing of sqlcanary
but this file (nothing of sqlcanary's state or settings is in the process). It prints one hello line
(`{"sqlcanary_host": "ready"}`, or `"error"` with the reason the target cannot be loaded), then answers JSON
lines, the persistent agent protocol in an envelope: each `{"seq": N, "request": {...}}` (the request a
`command:` agent would get) is answered, in any order, by `{"seq": N, "reply": <what the function returned>}`,
`{"seq": N, "raised": "Type: message", "trace": "..."}` or `{"seq": N, "returned_type": "set"}` (a value JSON
cannot carry). The agent's own prints go to stderr: stdout is the protocol's alone."""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

TRACE_KEEP = 4000  # bytes of a traceback kept (as bot.agents.pipes.STDERR_KEEP)
# The host, booted without importing sqlcanary: argv[1] is this file, the rest its arguments.
BOOT = (
    "import importlib.util as u, sys; s = u.spec_from_file_location('sqlcanary_pyhost', sys.argv[1]); "
    "m = u.module_from_spec(s); sys.modules[s.name] = m; s.loader.exec_module(m); sys.exit(m.main(sys.argv[2:]))"
)


class LoadError(Exception):
    """The target cannot be loaded: the message says why (the caller raises it as an AgentError)."""


def load_target(target: str, base_dir: str) -> Callable[..., Any]:
    """`path/to/file.py:func` (relative to base_dir) or `package.module:func`."""
    module_part, sep, func_name = target.rpartition(":")
    if not sep or not module_part or not func_name:
        raise LoadError(f"python agent: expected MODULE_OR_FILE:FUNCTION, got {target!r}")
    try:
        if module_part.endswith(".py") or "/" in module_part:
            path = Path(module_part)
            if not path.is_absolute():
                path = Path(base_dir) / path
            if not path.is_file():
                raise LoadError(f"python agent: no such file {path}")
            spec = importlib.util.spec_from_file_location(f"sqlcanary_agent_{abs(hash(str(path)))}", path)
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = _import_from(module_part, base_dir)
    except LoadError:
        raise
    except Exception as exc:  # user code failing at import
        raise LoadError(f"python agent: importing {module_part} failed: {type(exc).__name__}: {exc}") from exc
    fn = getattr(module, func_name, None)
    if not callable(fn):
        raise LoadError(f"python agent: {module_part} has no function {func_name!r}")
    return fn


def _import_from(name: str, base_dir: str) -> Any:
    """`name` imported with the agent's folder first on sys.path (sqlcanary's children start with Python's `-P`,
    so the working folder is not on it), and kept there: the agent's module may import its siblings later."""
    folder = str(Path(base_dir).absolute())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def encode_reply(reply: Any) -> dict[str, Any]:
    """What the function returned, as the protocol carries it; a value JSON cannot carry is named by its type
    (a dict's odd values are shown as text: only its `sql`, `error` and `used` matter)."""
    try:
        json.dumps(reply)
        return {"reply": reply}
    except (TypeError, ValueError):
        if isinstance(reply, dict):
            return {"reply": json.loads(json.dumps(reply, default=str, skipkeys=True))}
        return {"returned_type": type(reply).__name__}


def _send(out: TextIO, lock: threading.Lock, obj: dict[str, Any]) -> None:
    line = json.dumps(obj) + "\n"
    with lock:
        out.write(line)
        out.flush()


def _call(fn: Callable[..., Any], seq: Any, request: Any, out: TextIO, lock: threading.Lock) -> None:
    try:
        reply = fn(request)
    except Exception as exc:  # noqa: BLE001 - the agent's own failure, recorded on its case
        raised = f"{type(exc).__name__}: {exc}"
        _send(out, lock, {"seq": seq, "raised": raised, "trace": traceback.format_exc()[-TRACE_KEEP:]})
        return
    _send(out, lock, {"seq": seq, **encode_reply(reply)})


def serve(fn: Callable[..., Any], requests: TextIO, out: TextIO, lock: threading.Lock) -> None:
    """Each `{"seq": n, "request": {...}}` line is answered on a thread of its own (as the in-process agent's
    calls are): a slow call does not hold the others up, and one that never returns is simply left behind."""
    for line in requests:
        if not line.strip():
            continue
        message = json.loads(line)
        args = (fn, message.get("seq"), message.get("request"), out, lock)
        threading.Thread(target=_call, args=args, daemon=True).start()


def _no_new_privileges() -> None:
    """As bot.agents.sandbox.forbid_new_privileges (this file imports nothing of sqlcanary)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)


def main(argv: list[str]) -> int:
    target, base_dir = argv
    _no_new_privileges()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    lock = threading.Lock()
    os.dup2(2, 1)  # the agent's prints (and its children's) go to stderr
    sys.stdout = sys.stderr
    try:
        fn = load_target(target, base_dir)
    except LoadError as exc:
        _send(out, lock, {"sqlcanary_host": "error", "error": str(exc)})
        return 1
    _send(out, lock, {"sqlcanary_host": "ready"})
    serve(fn, io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8"), out, lock)
    return 0
