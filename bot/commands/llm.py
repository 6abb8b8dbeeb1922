"""`sqlcanary llm serve --replay FILE`: the shipped OpenAI-compatible replay server for other processes (a
`command:` agent, the Docker action's `openai-base-url`). Prints the base URL, then one line per request
answered, until Ctrl-C. In-process use needs no server of its own: `llm.base_url: replay:FILE`.
`sqlcanary llm serve --record FILE --upstream URL`: a proxy to a real endpoint that writes what it answered
as a replay file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.base.errors import EXIT_OK, ConfigError
from bot.base.settings import Settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="llm_command", metavar="ACTION")
    serve = sub.add_parser(
        "serve", help="serve scripted replies from a replay file at an OpenAI-compatible URL"
    )
    what = serve.add_mutually_exclusive_group(required=True)
    what.add_argument("--replay", metavar="FILE", help="answer from this replay file (YAML: replies: [...])")
    what.add_argument("--record", metavar="FILE", help="forward to --upstream and write its replies to FILE")
    serve.add_argument("--upstream", metavar="URL", help="with --record: the real endpoint's base URL")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    serve.add_argument("-q", "--quiet", action="store_true", help="print only the base URL")


def main(args: argparse.Namespace, settings: Settings) -> int:
    from bot.llm.replay import Answer, load_replay
    from bot.llm.replay_server import ReplayServer

    if args.llm_command != "serve":
        raise ConfigError("give an action: sqlcanary llm serve --replay FILE")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be from 0 to 65535, got {args.port}")
    if args.record:
        return _record(args)
    if args.upstream:
        raise ConfigError("--upstream goes with --record FILE (a replay answers on its own)")
    replay = load_replay(args.replay)

    def report(answer: Answer) -> None:
        if args.quiet or answer.info is None:
            return
        what = f"{replay.path}:{answer.line}" if answer.line is not None else f"no match ({answer.status})"
        print(f"{answer.info.label()} -> {what}", file=sys.stderr, flush=True)

    try:
        server = ReplayServer(replay, host=args.host, port=args.port, on_answer=report)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return _serve(server, args, f"serving {len(replay.entries)} scripted repl(ies) from {replay.path}")


def _record(args: argparse.Namespace) -> int:
    from bot.llm.replay_record import RecordingServer

    if not args.upstream or not args.upstream.startswith(("http://", "https://")):
        raise ConfigError("--record FILE needs --upstream URL, the real endpoint (http:// or https://)")
    folder = Path(args.record).parent
    if not folder.is_dir():
        raise ConfigError("no such folder for the recording", path=str(folder))

    def report(info, n: int) -> None:
        if not args.quiet:
            print(f"{info.label()} -> recorded as entry {n}", file=sys.stderr, flush=True)

    try:
        server = RecordingServer(args.record, args.upstream, host=args.host, port=args.port, on_record=report)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return _serve(server, args, f"recording the replies of {args.upstream} to {args.record}")


def _serve(server, args: argparse.Namespace, what: str) -> int:
    with server:
        print(server.base_url, flush=True)
        if not args.quiet:
            print(
                f"sqlcanary: {what}; set llm.base_url (or SQLCANARY_LLM_BASE_URL) to {server.base_url}; "
                "Ctrl-C stops",
                file=sys.stderr,
                flush=True,
            )
        try:
            server.wait()
        except KeyboardInterrupt:
            pass
    return EXIT_OK
