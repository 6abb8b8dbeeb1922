"""The perturbed copies a run needs: for each database with a case that asks for copies (`--perturb K`, a case's
or the defaults' `perturb:`), a pool of max(K, 4) copies planned from the suite's golds on that database (all of
them, whatever the run selects, so every selection finds the same pool), built once (bot/db/perturb.py), and
cloned for this run."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import psycopg2

from bot.base.errors import DatabaseError
from bot.cases.model import READ_ONLY_CATEGORIES, Case, Suite
from bot.db.outcome import first_line
from bot.db.perturb import ensure_pool, working_copies
from bot.db.perturb_changes import Change
from bot.db.provision import Server
from bot.db.role import ensure_runner_role
from bot.db.templates import Database
from bot.run.perturb_plan import copy_plans, golds_targets, pool_size
from bot.run.perturbed import Copies


def copies_wanted(cases: list[Case], run_level: int | None) -> dict[str, int]:
    """The most copies any selected case of each database asks for (databases asking none left out)."""
    wanted: dict[str, int] = {}
    for case in cases:
        k = case.perturb_copies(run_level)
        if k:
            wanted[case.db] = max(wanted.get(case.db, 0), k)
    return wanted


def _plans(golds: list[str], count: int) -> list[list[Change]]:
    return copy_plans(golds_targets(golds), count)


@contextmanager
def perturbed_copies(
    server: Server,
    suite: Suite,
    dbs: dict[str, Database],
    wanted: dict[str, int],
    *,
    timeout_ms: int,
    row_cap: int,
    rankings: Path | None,
    workers: int = 1,
) -> Iterator[Copies | None]:
    if not wanted:
        yield None
        return
    password = ensure_runner_role(server)
    pools: dict[str, tuple[str, ...]] = {}
    for label, k in sorted(wanted.items()):
        golds = [
            g for c in suite.cases if c.db == label and c.category in READ_ONLY_CATEGORIES for g in c.gold_sql
        ]
        db, count = dbs[label], pool_size(k)
        try:
            pools[label] = ensure_pool(
                server,
                base=db.template,
                fingerprint=db.fingerprint,
                label=label,
                source=golds,  # the plans are made from the golds only when a copy must be built
                plans=partial(_plans, golds, count),
                count=count,
                password=password,
            )
        except psycopg2.Error as exc:
            raise DatabaseError(
                f"could not build the perturbed copies of database {label!r} (--perturb): {first_line(exc)}"
            ) from exc
    run_tag = f"p{os.getpid()}_{secrets.token_hex(3)}"
    with working_copies(server, pools, run_tag=run_tag, password=password) as clones:
        copies = Copies(clones, timeout_ms=timeout_ms, row_cap=row_cap, rankings=rankings, workers=workers)
        try:
            yield copies
        finally:
            copies.close()
