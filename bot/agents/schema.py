"""Schema text for the `llm` agent's prompt: live from a database (tables, columns, types, COMMENTs) or, without
one, the CREATE TABLE / CREATE VIEW / COMMENT ON statements of a suite's fixture files. Here rather than in
bot.llm (the client): it splits fixture files with bot.db, a sibling layer that bot.llm must not import."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

_LIVE = """
SELECT c.relname, c.relkind, obj_description(c.oid, 'pg_class'), a.attname,
       format_type(a.atttypid, a.atttypmod), a.attnotnull, col_description(c.oid, a.attnum)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p')
ORDER BY c.relname, a.attnum
"""
_KEEP = ("CREATE TABLE", "CREATE VIEW", "CREATE MATERIALIZED VIEW", "CREATE OR REPLACE VIEW", "COMMENT ON")


def describe_live(dsn: str) -> str:
    """The public schema of the database at `dsn`, as commented pseudo-DDL."""
    import psycopg2

    conn = psycopg2.connect(dsn, connect_timeout=10)
    try:
        conn.set_session(readonly=True, autocommit=True)
        with conn.cursor() as cur:
            cur.execute(_LIVE)
            rows = cur.fetchall()
    finally:
        conn.close()
    return render_tables(rows)


def render_tables(rows: Iterable[tuple]) -> str:
    """(table, kind, table comment, column, type, not null, column comment) rows -> DDL-like text."""
    tables: dict[str, tuple[str, str | None, list[str]]] = {}
    for table, kind, tcomment, column, dtype, notnull, ccomment in rows:
        entry = tables.setdefault(table, ("VIEW" if kind in ("v", "m") else "TABLE", tcomment, []))
        line = f"    {column} {dtype}{' NOT NULL' if notnull else ''}"
        entry[2].append(f"{line}  -- {ccomment}" if ccomment else line)
    out = []
    for table, (kind, comment, columns) in tables.items():
        head = f"-- {comment}\n" if comment else ""
        out.append(f"{head}{kind} {table} (\n" + ",\n".join(columns) + "\n);")
    return "\n\n".join(out) + ("\n" if out else "")


def describe_fixture(files: Iterable[Path]) -> str:
    """The DDL and COMMENT statements of fixture files (no data, no functions): a schema without a database."""
    from bot.db.statements import UnsafeSQL, split_statements

    kept: list[str] = []
    for f in files:
        try:
            statements = split_statements(Path(f).read_text(encoding="utf-8"))
        except (OSError, UnsafeSQL):
            continue
        for st in statements:
            lines = [ln for ln in st.text.splitlines() if not ln.strip().startswith("--")]
            text = "\n".join(lines).strip()
            if " ".join(text.split()[:4]).upper().startswith(_KEEP):
                kept.append(text + ";")
    return "\n".join(kept) + ("\n" if kept else "")
