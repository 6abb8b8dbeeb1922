"""What a case's checks read besides rows: the schema as names resolve it. A write case's prediction may change
rows; when it also changes the schema where the gold does not (a view or table put in the place of the one a
check reads, a renamed column, a row-level security policy forced on the owner, a function replaced), its checks
could read what the prediction built instead of what it changed, so such a prediction is not judged by them
(bot.run.write_cases). Indexes are not part of it: they change how a read runs, never what it returns.

One query, fully qualified, over the catalogs that decide what a name means and what a read returns; with the
transaction's start time, so an evaluator can also tell that the case's transaction is still the one it opened.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.db.session import Session

STATE_PARTS = (  # each a query of one text: the catalogs that decide what a name means
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', c.oid, c.relname, c.relnamespace, c.relkind, "
    "c.relrowsecurity, c.relforcerowsecurity, c.relhasrules), ',' ORDER BY c.oid) FROM pg_catalog.pg_class c "
    "WHERE c.relkind OPERATOR(pg_catalog.<>) ALL ('{i,I}'::pg_catalog.char[])",
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', n.oid, n.nspname), ',' ORDER BY n.oid) "
    "FROM pg_catalog.pg_namespace n",
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', a.attrelid, a.attnum, a.attname, a.attisdropped, "
    "a.attgenerated, a.atttypid), ',' ORDER BY a.attrelid, a.attnum) FROM pg_catalog.pg_attribute a "
    "JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) a.attrelid "
    "WHERE a.attrelid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid "
    "AND r.relkind OPERATOR(pg_catalog.<>) ALL ('{i,I}'::pg_catalog.char[])",
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', p.oid, p.polrelid, p.polname, p.polcmd, "
    "p.polpermissive, pg_catalog.md5(coalesce(p.polqual::pg_catalog.text, ''))), ',' ORDER BY p.oid) "
    "FROM pg_catalog.pg_policy p",
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', r.oid, r.ev_class, r.ev_type, r.ev_enabled, "
    "pg_catalog.md5(r.ev_action::pg_catalog.text)), ',' ORDER BY r.oid) FROM pg_catalog.pg_rewrite r "
    "WHERE r.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid",
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', f.oid, f.proname, f.pronamespace, f.prosecdef, "
    "pg_catalog.md5(f.prosrc)), ',' ORDER BY f.oid) FROM pg_catalog.pg_proc f "
    "WHERE f.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid",
    "SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', o.oid, o.oprname, o.oprnamespace, o.oprcode), ',' "
    "ORDER BY o.oid) FROM pg_catalog.pg_operator o WHERE o.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid",
)
_STATE_SQL = (
    "SELECT pg_catalog.transaction_timestamp()::pg_catalog.text, pg_catalog.md5(pg_catalog.concat_ws('|', "
    + ", ".join(f"({part})" for part in STATE_PARTS)
    + "))"
)


@dataclass(frozen=True)
class SchemaState:
    transaction: str  # when the transaction the state was read in started
    schema: str  # a digest of the schema as names resolve it


def schema_state(session: Session) -> SchemaState:
    """The schema's digest, read in the session's current transaction (after whatever it has run)."""
    rows = session.raw(session.take_pending() + _STATE_SQL)
    if not rows:  # pragma: no cover - one row always
        return SchemaState(transaction="", schema="")
    return SchemaState(transaction=str(rows[0][0]), schema=str(rows[0][1]))
