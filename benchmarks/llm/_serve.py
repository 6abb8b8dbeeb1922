"""Run by benchmarks/llm/server.py with the venv's Python (the one that has xllamacpp): load a GGUF into
llama.cpp's OpenAI-compatible server on 127.0.0.1:PORT, print one JSON line with the address, and serve until
SIGTERM or SIGINT.

xllamacpp.Server(params) starts llama.cpp's native HTTP server in background threads; this process only has
to stay alive. Kept apart from server.py so that sqlcanary's own environment never needs xllamacpp."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading


def _watch(parent: int, stop: threading.Event) -> None:
    """Never outlive the process that started us, however it ended."""
    while not stop.wait(2.0):
        if os.getppid() != parent:
            stop.set()  # the main thread leaves stop.wait() (or returns to it, once the model has loaded)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--alias", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ctx", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--parent", type=int, help="stop when this process is gone (a parent killed with SIGKILL)")
    args = p.parse_args(argv)

    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_prompt = True  # the shared system prompt (schema + KB) is evaluated once, then reused
    params.fit_params = False  # CPU only: take n_ctx as given
    params.endpoint_metrics = True  # /metrics: the benchmark reads token counts per phase
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.parent:
        threading.Thread(target=_watch, args=(args.parent, stop), daemon=True).start()
    server = xlc.Server(params)
    print(json.dumps({"address": server.listening_address}), flush=True)
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
