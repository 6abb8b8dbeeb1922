"""Perturbed copies of a fixture: templates made once from the fixture's template with a plan of changes applied
(bot/db/perturb_changes.py), kept and pruned like templates, and cloned per run like the real database.

A pool is named by the fixture's fingerprint and a hash of its plans, so the same fixture and the same golds find
the same copies again; what each copy changed is kept in the copy itself (`_sqlcanary.perturbation`, readable by
the runner role, which the verdict quotes). A run works on kept working copies of them, leased as the real
databases' are (bot.db.copies): nothing is cloned or dropped on a warm run's path.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager

import psycopg2
from psycopg2 import sql

from bot.db.copies import lease_copy
from bot.db.inventory import TEMPLATE_PREFIX, WORK_PREFIX, touch_template
from bot.db.perturb_changes import Change, apply_changes
from bot.db.provision import Server
from bot.db.templates import (
    Database,
    admin_connect,
    clone_database,
    drop_database,
    drop_databases,
    promote_template,
    runner_dsn,
)

PERTURB_VERSION = "10"  # bump when the way copies are made changes


def pool_key(fingerprint: str, source: object, count: int) -> str:
    """The pool's name part: the fixture, what the plans are made from (the golds) and how many copies."""
    text = json.dumps([PERTURB_VERSION, fingerprint, source, count], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _exists(cur, name: str) -> bool:
    cur.execute("SELECT datistemplate FROM pg_database WHERE datname = %s", (name,))
    row = cur.fetchone()
    return bool(row and row[0])


def _build_copy(server: Server, base: str, name: str, plan: list[Change], seed: int, password: str) -> None:
    """Clone `base` to `name` + "_building", apply `plan` as the runner role, record it, and turn it into a
    template named `name` (a copy that died half-way is dropped and built again by the next run)."""
    building = f"{name[:52]}_building"
    clone_database(server, base, building)
    try:
        with closing(psycopg2.connect(runner_dsn(server, building, password), connect_timeout=10)) as conn:
            with conn.cursor() as cur:
                cur.execute("SET statement_timeout = '60s'")
            conn.commit()
            applied = apply_changes(conn, plan, seed=seed)
        with closing(admin_connect(server, building)) as aconn, aconn.cursor() as cur:
            cur.execute("CREATE TABLE _sqlcanary.perturbation (change text NOT NULL, ord int NOT NULL)")
            for i, text in enumerate(applied):
                cur.execute("INSERT INTO _sqlcanary.perturbation VALUES (%s, %s)", (text, i))
            cur.execute("GRANT SELECT ON _sqlcanary.perturbation TO PUBLIC")
            cur.execute("ANALYZE")
        with closing(admin_connect(server)) as conn, conn.cursor() as cur:
            cur.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(building)))
            promote_template(cur, building, name)
    except BaseException:
        drop_database(server, building)
        raise


def ensure_pool(
    server: Server,
    *,
    base: str,
    fingerprint: str,
    label: str,
    source: object,
    plans: Callable[[], list[list[Change]]],
    count: int,
    password: str,
) -> tuple[str, ...]:
    """The templates of the `count` perturbed copies of `base`, built once from `plans()` (called only when one
    is missing) and reused while the fixture and `source` (what the plans are made from) are unchanged.
    Concurrent runs wait for the one that builds them."""
    key = pool_key(fingerprint, source, count)
    names = tuple(f"{TEMPLATE_PREFIX}{label[:20]}_{fingerprint}_x{key}_{i}".lower() for i in range(count))
    if not names:
        return names
    with closing(admin_connect(server)) as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (names[0],))
        try:
            made: list[list[Change]] | None = None
            for i, name in enumerate(names):
                if _exists(cur, name):
                    touch_template(cur, name)
                    continue
                made = made if made is not None else plans()
                cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
                _build_copy(server, base, name, made[i], seed=i, password=password)
        finally:
            cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (names[0],))
    return names


def read_changes(dsn: str) -> tuple[str, ...]:
    """What a copy changed, from a clone of it (as the runner role)."""
    with closing(psycopg2.connect(dsn, connect_timeout=10)) as conn, conn.cursor() as cur:
        cur.execute("SELECT change FROM _sqlcanary.perturbation ORDER BY ord")
        return tuple(r[0] for r in cur.fetchall())


class Clones:
    """The working copies of the perturbed copies this run uses (the runner role works only on clones), each
    leased when first used, so a run leases only the copies its cases are judged on. A copy is leased under a
    lock of its own: a worker waits only for the copy it needs. When every slot of a copy is leased by other
    runs, the run clones one of its own; `close()` drops those and ends the leases."""

    def __init__(
        self, server: Server, pools: dict[str, tuple[str, ...]], *, run_tag: str, password: str
    ) -> None:
        self.server, self.pools, self.run_tag, self.password = server, pools, run_tag, password
        self._got: dict[tuple[str, int], Database] = {}
        self._own: list[str] = []
        self._lock = threading.Lock()
        self._each: dict[tuple[str, int], threading.Lock] = {}
        self._leases = admin_connect(server)  # its closing ends every lease
        self._lease_lock = threading.Lock()

    def count(self, label: str) -> int:
        return len(self.pools.get(label, ()))

    def get(self, label: str, i: int) -> Database:
        key = (label, i)
        with self._lock:
            if key in self._got:
                return self._got[key]
            one = self._each.setdefault(key, threading.Lock())
        with one:
            if key not in self._got:
                db = self._lease(label, i)
                with self._lock:
                    self._got[key] = db
        return self._got[key]

    def _lease(self, label: str, i: int) -> Database:
        template = self.pools[label][i]
        with self._lease_lock, self._leases.cursor() as cur:
            leased = lease_copy(self.server, cur, template, clone=clone_database)
        if leased is not None:
            name = leased[0]
        else:
            name = f"{WORK_PREFIX}{label[:20]}_{self.run_tag}_x{i}".lower()
            clone_database(self.server, template, name)
            with self._lock:
                self._own.append(name)
        dsn = runner_dsn(self.server, name, self.password)
        return Database(name=name, template=template, fingerprint="", dsn=dsn)

    def close(self) -> None:
        with self._lock:
            names, self._own = self._own, []
            self._got.clear()
        try:
            drop_databases(self.server, names)
        finally:
            self._leases.close()


@contextmanager
def working_copies(
    server: Server, pools: dict[str, tuple[str, ...]], *, run_tag: str, password: str
) -> Iterator[Clones]:
    clones = Clones(server, pools, run_tag=run_tag, password=password)
    try:
        yield clones
    finally:
        clones.close()
