"""Template databases keyed by fixture content, and each run's working copies of them (kept and leased:
bot.db.copies; the restricted role: bot.db.role)."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Protocol

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import make_dsn, parse_dsn

from bot.base.errors import CaseFileError
from bot.base.fixture_files import FixtureFile
from bot.db.copies import drop_copies, is_copy, lease_copy, stale_copies
from bot.db.fixture_load import load_fixture
from bot.db.guards import guards_sql
from bot.db.inventory import TEMPLATE_PREFIX, WORK_PREFIX, PrunePolicy, prune_templates, touch_template
from bot.db.provision import Server, admin_connect
from bot.db.role import RUNNER_ROLE, ensure_runner_role

LOADER_VERSION = "7"  # bump when the way templates are prepared changes
_RELATIVE_DATES = re.compile(
    r"current_date|current_timestamp|now\s*\(|localtimestamp|transaction_timestamp", re.I
)


@dataclass(frozen=True)
class Database:
    """A working database of a run: where the runner role connects."""

    name: str
    template: str
    fingerprint: str
    dsn: str


def fixture_fingerprint(files: tuple[FixtureFile, ...], server: Server) -> str:
    """Content hash of the fixture files, the server's major version and, for fixtures that insert dates
    relative to today, today's date (such data must be loaded on the day of the run)."""
    h = hashlib.sha256(f"loader{LOADER_VERSION}:pg{server.version_num // 10000}".encode())
    relative = False
    for f in files:
        data = f.data
        h.update(hashlib.sha256(data).digest())
        relative = relative or bool(_RELATIVE_DATES.search(data.decode("utf-8", "replace")))
    if relative:
        h.update(dt.date.today().isoformat().encode())
    return h.hexdigest()[:16]


_HAND_OVER = """
GRANT USAGE, CREATE ON SCHEMA public TO {role};
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', '_sqlcanary') AND n.nspname NOT LIKE 'pg\\_%'
             AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
             AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.classid = 'pg_class'::regclass
                             AND d.deptype IN ('a', 'i') AND c.relkind = 'S')
  LOOP
    EXECUTE format('ALTER %s %I.%I OWNER TO %I',
      CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                     WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.nspname, r.relname, '{role}');
  END LOOP;
  FOR r IN SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'public')
           AND nspname NOT LIKE 'pg\\_%'
  LOOP
    EXECUTE format('ALTER SCHEMA %I OWNER TO %I', r.nspname, '{role}');
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS sig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
             AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
  LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO %I', r.sig, '{role}');
  END LOOP;
END $$;
"""  # the grant first: an admin that is not a superuser may give a table only to a role that may create in its schema


def promote_template(cur, loading: str, name: str) -> None:
    """The database `loading`, ready, renamed `name` and made a template no one connects to."""
    cur.execute(
        sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(loading), sql.Identifier(name))
    )
    cur.execute(
        sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false").format(
            sql.Identifier(name)
        )
    )
    touch_template(cur, name)


def _open_to_runner(cur, name: str) -> None:
    """Let the restricted role connect to database `name` and create in it, never create temporary objects
    there (one could stand in front of a table a check reads). The privileges go to PUBLIC: a grant to the role
    itself would be a privilege it holds on a shared object, which every run's role check resets
    (bot.db.rolestate)."""
    ident = sql.Identifier(name)
    cur.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(ident))
    cur.execute(sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO PUBLIC").format(ident))


@contextmanager
def _catalog_only(server: Server, dbname: str) -> Iterator[psycopg2.extensions.cursor]:
    """An admin cursor in `dbname` whose session names only pg_catalog: nothing a fixture created there can
    stand in for a function or operator the admin calls."""
    with closing(admin_connect(server, dbname)) as conn, conn.cursor() as cur:
        cur.execute("SET search_path = pg_catalog, pg_temp")
        yield cur


class FixtureLoader(Protocol):
    """Runs fixture files into the database `dbname` as the restricted role (whose password is `password`)."""

    def __call__(
        self, server: Server, dbname: str, password: str, files: tuple[FixtureFile, ...], *, db_label: str
    ) -> None: ...


def load_here(
    server: Server, dbname: str, password: str, files: tuple[FixtureFile, ...], *, db_label: str
) -> None:
    """The fixture loaded by this process (bot.db.fixture_load), as the restricted role."""
    load_fixture(runner_dsn(server, dbname, password), files, db_label=db_label)


def _prepare(
    server: Server, loading: str, files: tuple[FixtureFile, ...], *, db_label: str, load: FixtureLoader
) -> None:
    """Load the fixture into `loading` (opened to the role by _open_to_runner) as the restricted role, by `load`
    (bot.db.fixture_load: untrusted SQL never runs as the admin), then, as the admin, give the role what the
    fixture left to others, add the guard schema and ANALYZE."""
    password = ensure_runner_role(server)
    with _catalog_only(server, loading) as cur:
        cur.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA public TO {}").format(sql.Identifier(RUNNER_ROLE)))
    load(server, loading, password, files, db_label=db_label)
    try:
        with _catalog_only(server, loading) as cur:
            cur.execute(_HAND_OVER.replace("{role}", RUNNER_ROLE))
            cur.execute(guards_sql(RUNNER_ROLE))
            cur.execute("ANALYZE")
    except psycopg2.Error as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CaseFileError(
            f"fixture of database {db_label!r} loaded, but its template could not be prepared: {first} (a "
            "fixture must not create the `_sqlcanary` schema or change what sqlcanary adds)",
            path=str(files[-1].path) if files else None,
        ) from None


def ensure_template(
    server: Server, *, db_label: str, files: tuple[FixtureFile, ...], load: FixtureLoader = load_here
) -> tuple[str, str]:
    """The template database for these fixture files, loaded once (by `load`) and reused while they are
    unchanged.

    Returns (template name, fingerprint)."""
    fingerprint = fixture_fingerprint(files, server)
    name = f"{TEMPLATE_PREFIX}{db_label[:30]}_{fingerprint}".lower()
    conn = admin_connect(server)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
            try:
                cur.execute("SELECT datistemplate FROM pg_database WHERE datname = %s", (name,))
                row = cur.fetchone()
                if row and row[0]:
                    touch_template(cur, name)
                    return name, fingerprint
                if row:  # a load that died half-way
                    cur.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
                loading = f"{name[:50]}_loading"
                cur.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(loading))
                )
                cur.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(
                        sql.Identifier(loading)
                    )
                )
                _open_to_runner(cur, loading)
                try:
                    _prepare(server, loading, files, db_label=db_label, load=load)
                except BaseException:
                    cur.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(loading))
                    )
                    raise
                promote_template(cur, loading, name)
                return name, fingerprint
            finally:
                cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,))
    finally:
        conn.close()


def clone_database(server: Server, template: str, name: str) -> None:
    """A clone the admin owns: the runner role may create in it but can neither alter nor drop it (every run's
    clones would otherwise be the runner's, open to `ALTER DATABASE ... SET` or `DROP DATABASE` from another
    run's prediction). The privileges go to PUBLIC, so the runner holds no grant on a shared object."""
    ident = sql.Identifier(name)
    with closing(admin_connect(server)) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        cur.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(ident, sql.Identifier(template)))
        _open_to_runner(cur, name)


def drop_database(server: Server, name: str) -> None:
    drop_databases(server, [name])


def drop_databases(server: Server, names: Iterable[str]) -> None:
    """Drop `names` over one admin connection; one that cannot be dropped is left (a later run's clean-up, or
    `db clean`, takes it)."""
    names = list(names)
    if not names:
        return
    try:
        with closing(admin_connect(server)) as conn, conn.cursor() as cur:
            for name in names:
                try:
                    cur.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                    )
                except psycopg2.Error:
                    if conn.closed:
                        return
    except psycopg2.Error:
        pass  # the server may be gone; nothing left to clean


def runner_dsn(server: Server, dbname: str, password: str) -> str:
    params = parse_dsn(server.admin_dsn)
    params.update(user=RUNNER_ROLE, password=password, dbname=dbname)
    return make_dsn(**params)


def drop_stale_work_databases(server: Server) -> None:
    """Working databases left by runs that died (their process is gone) and kept copies whose template is
    gone; only for local servers."""
    if server.kind != "embedded":
        return
    with closing(admin_connect(server)) as conn, conn.cursor() as cur:
        cur.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (WORK_PREFIX + "%",))
        names = [r[0] for r in cur.fetchall()]
        stale_copies(cur)
    for name in names:
        m = re.search(r"_p(\d+)_", name)
        if m and not is_copy(name) and not _pid_alive(int(m.group(1))):
            drop_database(server, name)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def working_databases(
    server: Server,
    databases: Mapping[str, tuple[FixtureFile, ...]],
    *,
    prune: PrunePolicy | None = None,
    load: FixtureLoader = load_here,
) -> Iterator[dict[str, Database]]:
    """A working copy of each suite database's template for this run: a kept copy leased for the run
    (bot.db.copies), or, when every slot is leased, a clone of its own dropped afterwards. Templates past
    `prune` (default: `PrunePolicy()`) are dropped at the end with their copies (bot/db/inventory.py)."""
    drop_stale_work_databases(server)
    password = ensure_runner_role(server)
    run_tag = f"p{os.getpid()}_{secrets.token_hex(3)}"
    made: list[str] = []
    out: dict[str, Database] = {}
    with closing(admin_connect(server)) as leases, leases.cursor() as cur:  # its closing ends the leases
        try:
            for label, files in databases.items():
                template, fingerprint = ensure_template(server, db_label=label, files=files, load=load)
                leased = lease_copy(server, cur, template, clone=clone_database)
                name = leased[0] if leased else f"{WORK_PREFIX}{label[:24]}_{run_tag}".lower()
                if leased is None:
                    clone_database(server, template, name)
                    made.append(name)
                out[label] = Database(
                    name=name,
                    template=template,
                    fingerprint=fingerprint,
                    dsn=runner_dsn(server, name, password),
                )
            yield out
        finally:
            drop_databases(server, made)
            if out:
                pruned = prune_templates(
                    server, prune or PrunePolicy(), keep={db.template for db in out.values()}
                )
                for template in pruned:
                    drop_copies(cur, template)
