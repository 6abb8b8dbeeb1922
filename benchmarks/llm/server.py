"""Start and stop a local llama.cpp server (xllamacpp) for the benchmark and the `llm` test.

    with local_server(setup.ensure("1.5b")) as srv:
        srv.base_url   # http://127.0.0.1:PORT/v1, for llm.base_url / SQLCANARY_LLM_BASE_URL
        srv.model      # the name it answers to, for llm.model / SQLCANARY_LLM_MODEL

The server is a child process running the setup venv's Python (benchmarks/llm/_serve.py), so sqlcanary's
environment never imports xllamacpp. It listens on a free loopback port and is ready when `/health` says ok
(3-6 s for the 1.5B model). Leaving the block, however it is left, sends SIGTERM and waits; SIGKILL only if it
does not stop.

Settings, and why: one slot (`parallel=1`) so the prompt cache keeps the shared prefix of the llm agent's
prompt (schema + KB, ~6,900 tokens) between cases; a context of 16,384 tokens, room for that prompt plus a
2,048-token reply, and for a repair prompt with its feedback; 2 threads, the machine's cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.llm.setup import Installed

HERE = Path(__file__).resolve().parent
DEFAULT_CTX = 16_384


class ServerError(Exception):
    """The server did not come up; the message ends with the tail of its log."""


@dataclass(frozen=True)
class LocalServer:
    base_url: str  # ends in /v1
    model: str
    pid: int
    log: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(root: str) -> bool:
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=5) as resp:
            return resp.status == 200 and json.loads(resp.read() or b"{}").get("status") == "ok"
    except (urllib.error.URLError, OSError, ValueError):
        return False  # 503 "Loading model" arrives as HTTPError, a URLError


def _tail(log: Path, n: int = 2000) -> str:
    try:
        return log.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _stop(proc: subprocess.Popen, *, grace_s: float = 30.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextlib.contextmanager
def local_server(
    installed: Installed,
    *,
    ctx: int = DEFAULT_CTX,
    threads: int = 2,
    parallel: int = 1,
    ready_timeout_s: float = 180.0,
    log_dir: Path | None = None,
) -> Iterator[LocalServer]:
    """Serve `installed.model` until the block ends (see the module doc)."""
    port = free_port()
    folder = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="sqlcanary-llm-"))
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "server.log"
    cmd = [
        str(installed.python),
        str(HERE / "_serve.py"),
        "--model",
        str(installed.model),
        "--alias",
        installed.spec.name,
        "--port",
        str(port),
        "--ctx",
        str(ctx),
        "--threads",
        str(threads),
        "--parallel",
        str(parallel),
        "--parent",
        str(os.getpid()),
    ]
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not _healthy(root):
            if proc.poll() is not None:
                raise ServerError(f"the llama.cpp server exited with {proc.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise ServerError(
                    f"the llama.cpp server was not healthy after {ready_timeout_s:.0f} s:\n{_tail(log)}"
                )
            time.sleep(0.5)
        yield LocalServer(base_url=f"{root}/v1", model=installed.spec.name, pid=proc.pid, log=log)
    finally:
        _stop(proc)


def metrics(srv: LocalServer) -> dict[str, float]:
    """llama.cpp's counters (`/metrics`): prompt tokens (evaluated, and reused from the cache), tokens predicted
    and the seconds each took; {} when the server does not answer."""
    root = srv.base_url.removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/metrics", timeout=10) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:"):
            name, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[name.removeprefix("llamacpp:")] = float(value)
    return out


def main() -> int:
    """`python -m benchmarks.llm.server`: serve the set-up 1.5B model until Ctrl-C (for trying sqlcanary by hand)."""
    from benchmarks.llm.setup import installed

    found = installed("1.5b")
    if found is None:
        print("run `python benchmarks/llm/setup.py` first")
        return 2
    with local_server(found) as srv:
        print(
            f"SQLCANARY_LLM_BASE_URL={srv.base_url} SQLCANARY_LLM_MODEL={srv.model}  (log: {srv.log}; Ctrl-C stops)"
        )
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
