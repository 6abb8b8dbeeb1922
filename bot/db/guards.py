"""The `_sqlcanary` schema each template (so each working clone) carries: the only doors untrusted SQL goes
through, and the byte bound on every fetched result.

- `open_cursor(name, q, cap, checked)` opens a cursor on `q` wrapped so that the server counts the bytes of the
  rows it hands out (their text, as the client receives it) and raises `SQLSTATE BYTE_CAP_SQLSTATE` past `cap`,
  before the row that crosses it leaves the server. With `checked` (untrusted SQL), `q` is first opened on its
  own: PostgreSQL then refuses anything but one query, so `q`'s parentheses are balanced and the wrapper's
  output is exactly the rows it measured.
- `exec(q)` runs SQL for its effect inside the case's transaction (EXECUTE cannot end it).
- `exec_checked(q)` is `exec` for the scratch database, whose transactions commit: it raises
  `SHARED_EFFECT_SQLSTATE` when `q` changed anything outside the scratch clone (the runner role, its settings,
  memberships and grants, any database), so the caller's transaction rolls the change back.
- `explain(q)` gives `EXPLAIN (FORMAT JSON)` of one query.
"""

from __future__ import annotations

from bot.db.statements import UnsafeSQL, split_statements

GUARD_SCHEMA = "_sqlcanary"
BYTE_CAP = 64 * 1024 * 1024  # bytes of rows one fetched result may hold (their text, as sent to the client)
BYTE_CAP_SQLSTATE = "SQ001"
SHARED_EFFECT_SQLSTATE = "SQ002"

# Every name is qualified: a prediction that writes may have moved search_path before a trusted fetch.
_BOUNDED = (
    "SELECT (_w._r).* FROM (SELECT _s._r, pg_catalog.sum(pg_catalog.octet_length(_s._r::pg_catalog.text)) "
    "OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _b FROM (SELECT _q AS _r FROM (%s"
    "\n) _q) _s) _w WHERE _w._b OPERATOR(pg_catalog.<=) %s OR _sqlcanary.too_large(_w._b, %s)"
)

_SHARED_STATE = """SELECT md5(concat_ws('|',
  (SELECT a::text FROM {catalog} a WHERE a.rolname = '{role}'),
  (SELECT string_agg(s::text, ',' ORDER BY s.setdatabase, s.setrole) FROM pg_db_role_setting s
   WHERE s.setrole IN (0, (SELECT oid FROM {catalog} WHERE rolname = '{role}'))),
  (SELECT string_agg(m::text, ',' ORDER BY m.oid) FROM pg_auth_members m
   WHERE (SELECT oid FROM {catalog} WHERE rolname = '{role}') IN (m.roleid, m.member, m.grantor)),
  (SELECT string_agg(d::text, ',' ORDER BY d.classid, d.objid, d.refobjid, d.deptype) FROM pg_shdepend d
   WHERE d.dbid = 0 AND d.refobjid = (SELECT oid FROM {catalog} WHERE rolname = '{role}')),
  (SELECT string_agg(concat_ws(':', d.oid, d.datname, d.datacl), ',' ORDER BY d.oid) FROM pg_database d
   WHERE d.datdba = (SELECT oid FROM {catalog} WHERE rolname = '{role}')
      OR d.datacl::text LIKE '%{role}=%')))"""

GUARDS_SQL = f"""
CREATE SCHEMA _sqlcanary;
CREATE FUNCTION _sqlcanary.too_large(got bigint, cap bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION USING ERRCODE = '{BYTE_CAP_SQLSTATE}',
    MESSAGE = pg_catalog.format('the result exceeds the byte cap (%s bytes)', cap);
END $f$;
CREATE FUNCTION _sqlcanary.open_cursor(name text, q text, cap bigint, checked boolean) RETURNS refcursor
LANGUAGE plpgsql AS $f$
DECLARE c refcursor := name;
BEGIN
  IF checked THEN
    OPEN c NO SCROLL FOR EXECUTE q;
    CLOSE c;
  END IF;
  OPEN c NO SCROLL FOR EXECUTE pg_catalog.format('{_BOUNDED}', q, cap, cap);
  RETURN c;
END $f$;
CREATE FUNCTION _sqlcanary.exec(q text) RETURNS void LANGUAGE plpgsql AS $f$ BEGIN EXECUTE q; END $f$;
CREATE FUNCTION _sqlcanary.explain(q text) RETURNS json LANGUAGE plpgsql AS $f$
DECLARE r json; BEGIN EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO r; RETURN r; END $f$;
CREATE FUNCTION _sqlcanary.shared_state() RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $f$
-- Only what the restricted role can reach, so that other runs creating and dropping their clones meanwhile
-- never look like an effect of this statement: its own row, its settings (and database-wide ones), its
-- memberships, the shared objects and grants that name it, and any database it would own. pg_authid when the
-- template's owner may read it (a superuser), else pg_roles, which hides only the password (bot/db/managed.py).
BEGIN
  IF pg_catalog.has_table_privilege('pg_catalog.pg_authid', 'SELECT') THEN
    RETURN ({_SHARED_STATE.replace("{catalog}", "pg_authid")});
  END IF;
  RETURN ({_SHARED_STATE.replace("{catalog}", "pg_roles")});
END
$f$;
CREATE FUNCTION _sqlcanary.assert_shared_state(before text) RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
  IF _sqlcanary.shared_state() IS DISTINCT FROM before THEN
    RAISE EXCEPTION USING ERRCODE = '{SHARED_EFFECT_SQLSTATE}', MESSAGE = 'the statement changes something outside ' ||
      'the scratch database (the restricted role, its settings or grants, or a database); it was rolled back';
  END IF;
END $f$;
CREATE FUNCTION _sqlcanary.exec_checked(q text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE before text := _sqlcanary.shared_state();
BEGIN
  EXECUTE q;
  PERFORM _sqlcanary.assert_shared_state(before);
END $f$;
REVOKE ALL ON SCHEMA _sqlcanary FROM PUBLIC;
GRANT USAGE ON SCHEMA _sqlcanary TO {{role}};
DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace
           AND p.proname IN ('pg_terminate_backend', 'pg_cancel_backend')
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
END $$;
"""


def guards_sql(role: str) -> str:
    """The guard schema for a template whose objects belong to `role`. Also: the role cannot signal other
    backends (every run's sessions are this same role: a prediction could cancel or kill another run's)."""
    return GUARDS_SQL.replace("{role}", role)


def one_query(sql: str) -> str:
    """The query without a trailing `;` (and comments after it), so that it can be wrapped; anything else
    (several statements, text that does not tokenize) is returned as is for the server to refuse."""
    tail = sql.rstrip()
    if not tail.endswith(";") and "--" not in tail.rsplit("\n", 1)[-1] and not tail.endswith("*/"):
        return sql
    try:
        stmts = split_statements(sql)
    except UnsafeSQL:
        return sql
    return stmts[0].text if len(stmts) == 1 else sql
