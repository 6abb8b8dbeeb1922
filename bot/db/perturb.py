"""Perturbed copies of a fixture: templates made once from the fixture's template with a plan of changes applied
(bot/db/perturb_changes.py), kept and pruned like templates, and cloned per run like the real database.

A pool is named by the fixture's fingerprint and a hash of its plans, so the same fixture and the same golds find
the same copies again; what each copy changed is kept in the copy itself (`_sqlcanary.perturbation`, readable by
the runner role, which the verdict quotes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass

import psycopg2
from psycopg2 import sql

from bot.db.inventory import TEMPLATE_PREFIX, WORK_PREFIX, touch_template
from bot.db.perturb_changes import Change, apply_changes
from bot.db.provision import Server
from bot.db.templates import (
    Database,
    admin_connect,
    clone_database,
    drop_database,
    promote_template,
    runner_dsn,
)

PERTURB_VERSION = "6"  # bump when the way copies are made changes


@dataclass(frozen=True)
class Copy:
    """One perturbed copy: its template, and what it changed."""

    index: int
    template: str
    changes: tuple[str, ...]


def pool_key(fingerprint: str, plans: list[list[Change]]) -> str:
    text = json.dumps(
        [PERTURB_VERSION, fingerprint, [[c.__dict__ for c in p] for p in plans]], sort_keys=True
    )
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
    server: Server, *, base: str, fingerprint: str, label: str, plans: list[list[Change]], password: str
) -> tuple[str, ...]:
    """The templates of the perturbed copies of `base` (one per plan), built once and reused while the fixture
    and the plans are unchanged. Concurrent runs wait for the one that builds them."""
    key = pool_key(fingerprint, plans)
    names = tuple(
        f"{TEMPLATE_PREFIX}{label[:20]}_{fingerprint}_x{key}_{i}".lower() for i in range(len(plans))
    )
    with closing(admin_connect(server)) as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (names[0] if names else key,))
        try:
            for i, (name, plan) in enumerate(zip(names, plans, strict=True)):
                if _exists(cur, name):
                    touch_template(cur, name)
                    continue
                cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
                _build_copy(server, base, name, plan, seed=i, password=password)
        finally:
            cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (names[0] if names else key,))
    return names


def read_changes(dsn: str) -> tuple[str, ...]:
    """What a copy changed, from a clone of it (as the runner role)."""
    with closing(psycopg2.connect(dsn, connect_timeout=10)) as conn, conn.cursor() as cur:
        cur.execute("SELECT change FROM _sqlcanary.perturbation ORDER BY ord")
        return tuple(r[0] for r in cur.fetchall())


@contextmanager
def working_copies(
    server: Server, pools: dict[str, tuple[str, ...]], *, run_tag: str, password: str
) -> Iterator[dict[str, tuple[Database, ...]]]:
    """A clone of each copy for this run (the runner role works only on clones); dropped afterwards."""
    made: list[str] = []
    out: dict[str, tuple[Database, ...]] = {}
    try:
        for label, templates in pools.items():
            dbs = []
            for i, template in enumerate(templates):
                name = f"{WORK_PREFIX}{label[:20]}_{run_tag}_x{i}".lower()
                clone_database(server, template, name)
                made.append(name)
                dbs.append(
                    Database(
                        name=name, template=template, fingerprint="", dsn=runner_dsn(server, name, password)
                    )
                )
            out[label] = tuple(dbs)
        yield out
    finally:
        for name in made:
            drop_database(server, name)
