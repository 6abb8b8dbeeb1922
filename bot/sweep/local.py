"""`sweep run`: a sweep's legs on this machine. The legs are planned as the Action's `sweep-plan` plans its matrix
(bot.sweep.plan), each entry goes through the Action's leg code (bot.sweep.leg: the request, the environment, the
file, the setting recorded) and runs as a `sqlcanary run` child process of its own, up to `jobs` at a time, all on
one PostgreSQL provisioned here (its admin DSN reaches them as DATABASE_URL, as a check's trees get theirs). A leg's
output goes to a log beside its RunResult; a leg that fails is reported with its name and exit code, and the
others go on."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from bot.agents.env import agent_environment
from bot.base.errors import EXIT_BUG, EXIT_INTERRUPTED, EXIT_OK, SqlcanaryError
from bot.base.results import RunResult, read_run, write_run
from bot.base.selfchild import self_argv, stop_child, wait_child
from bot.base.settings import Settings
from bot.cases.selection import Shard
from bot.config.model import find_config
from bot.run.request import RunRequest
from bot.run.server import provision_server
from bot.sweep.grid import Setting
from bot.sweep.leg import MatrixEntry, leg_environ, leg_path, leg_request, parse_setting, with_setting
from bot.sweep.plan import plan_matrix

Say = Callable[[str], None]


@dataclass(frozen=True)
class Leg:
    entry: MatrixEntry  # the matrix entry, as a matrix job of the Action gets it
    shard: Shard | None  # None: the setting's whole suite in one leg (`--shards 1`)
    out: Path  # its RunResult: <out>/sweep/<setting>/run.json, or shard-<i>-of-<n>.json

    @property
    def name(self) -> str:
        return self.entry.name + (f" (shard {self.shard})" if self.shard else "")

    @property
    def log(self) -> Path:
        return self.out.with_suffix(".log")


@dataclass(frozen=True)
class LegOutcome:
    leg: Leg
    code: int  # the leg's `sqlcanary run` exit code (negative: killed by that signal)
    run: RunResult | None  # None: it wrote no run


def plan_legs(settings: list[Setting], shards: int, out_dir: Path) -> list[Leg]:
    """The legs of the Action's matrix (same entries, same order), each with the file it writes."""
    legs = []
    for item in plan_matrix(settings, shards)["include"]:
        entry, shard = parse_setting(json.dumps(item))
        shard = shard if shards > 1 else None
        legs.append(Leg(entry=entry, shard=shard, out=leg_path(out_dir, entry.name, shard)))
    return legs


def leg_environment(base: RunRequest, settings: Settings) -> dict[str, str]:
    """What each leg's `sqlcanary run` sees, as a side of `check` does (bot.check.child): the allow-list, the
    variables the config names for its agent (`agent.env`) and for the model (`llm.api_key_env`), sqlcanary's own
    settings, and the one PostgreSQL every leg uses. Never this process's whole environment."""
    req = base.anchored()
    config = find_config(req.config, req.suite, cwd=req.folder)
    server = provision_server(req.dsn, config, settings, req.postgres)
    names = [*(config.agent.env if config.agent else ()), config.llm.api_key_env]
    env = agent_environment(settings.environ, allow=tuple(names))
    env.update({k: v for k, v in settings.environ.items() if k.startswith("SQLCANARY_")})
    env["DATABASE_URL"] = server.admin_dsn
    return env


def run_leg(
    leg: Leg, base: RunRequest, leg_env: dict[str, str], running: Running | None = None
) -> LegOutcome:
    """The leg's `sqlcanary run` (a sweep measures: invalid cases are reported, not fatal), its output in its
    log; then its RunResult with the setting recorded, as the Action's `mode: sweep` writes it (an interrupted
    leg's incomplete run too)."""
    req = leg_request(base, leg.entry, leg.shard, leg.out)
    argv = self_argv("bot.cli", *req.run_argv())
    leg.out.parent.mkdir(parents=True, exist_ok=True)
    leg.out.unlink(missing_ok=True)  # never mistake an earlier sweep's file for this leg's
    with leg.log.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            argv,
            cwd=req.folder,
            env=leg_environ(leg_env, leg.entry),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if running is not None:
            running.add(proc)
        try:
            rc = wait_child(proc)
        finally:
            if running is not None:
                running.discard(proc)
    run = None
    if leg.out.is_file():
        try:
            run = with_setting(read_run(leg.out), leg.entry)
        except SqlcanaryError:
            run = None
        else:
            write_run(leg.out, run)
    if rc == EXIT_OK and run is None:
        rc = EXIT_BUG  # it said it finished, and wrote nothing readable
    return LegOutcome(leg=leg, code=rc, run=run)


class Running:
    """The legs' child processes that are running (a set shared by the pool's threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self.stopping = threading.Event()  # interrupted: start no more legs

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def stop_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            stop_child(proc)


def run_legs(
    legs: list[Leg], base: RunRequest, leg_env: dict[str, str], *, jobs: int, say: Say
) -> list[LegOutcome]:
    """Every leg, `jobs` at a time; `say` gets a line as each finishes. The outcomes are in the legs' order. An
    interruption (Ctrl-C) stops the running legs (each keeps its finished cases), starts no other (exit 130), and
    returns what there is."""
    running, lock, finished = Running(), threading.Lock(), [0]

    def one(leg: Leg) -> LegOutcome:
        if running.stopping.is_set():
            return LegOutcome(leg=leg, code=EXIT_INTERRUPTED, run=None)
        outcome = run_leg(leg, base, leg_env, running)
        with lock:
            finished[0] += 1
            say(f"sweep run: [{finished[0]}/{len(legs)}] {describe(outcome)}")
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(legs)))) as pool:
        futures = [pool.submit(one, leg) for leg in legs]
        try:
            wait(futures)
        except KeyboardInterrupt:
            running.stopping.set()
            say("sweep run: interrupted: stopping the running legs (their finished cases are kept)")
            running.stop_all()
            wait(futures)
    return [f.result() for f in futures]


def describe(outcome: LegOutcome) -> str:
    """One line about a finished leg; a failed one with the last lines of its log."""
    leg, run = outcome.leg, outcome.run
    if outcome.code == EXIT_OK and run is not None:
        s = run.summary
        rate = "n/a" if s.pass_rate is None else f"{s.pass_rate:.1%}"
        return f"leg {leg.name}: {s.passed}/{s.total} passed ({rate}): {leg.out}"
    if outcome.code == EXIT_INTERRUPTED:
        what = "interrupted"
    elif outcome.code < 0:
        what = f"killed by signal {-outcome.code}"
    else:
        what = f"failed with exit code {outcome.code}"
    kept = f"; its run is in {leg.out}" if run is not None else "; it wrote no run"
    tail = _tail(leg.log)
    return f"leg {leg.name}: {what}{kept}; log: {leg.log}" + "".join(f"\n    {line}" for line in tail)


def _tail(log: Path, lines: int = 3) -> list[str]:
    """The log's error lines (`sqlcanary: error: ...`), else its last lines."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    kept = [line for line in text.splitlines() if line.strip()]
    errors = [line for line in kept if "error:" in line]
    return (errors or kept)[-lines:]
