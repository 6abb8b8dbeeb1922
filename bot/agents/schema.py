"""Schema text for the `llm` agent's prompt: live from a database (tables, columns, types, COMMENTs) or, without
one, the CREATE TABLE / CREATE VIEW / COMMENT ON statements of a suite's fixture files. Here rather than in
bot.llm (the client): it splits fixture files with bot.db, a sibling layer that bot.llm must not import."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.base.errors import CaseFileError
from bot.base.fixture_files import FixtureFile

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


_COMMENT = re.compile(
    r"^COMMENT\s+ON\s+(?P<kind>TABLE|COLUMN)\s+(?P<target>[\w.\"]+)\s+IS\s+(?P<text>'(?:[^']|'')*'(?:\s*\n\s*'(?:[^']|'')*')*)\s*;?$",
    re.I | re.S,
)
_CREATE_TABLE = re.compile(r"^CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.\"]+)", re.I)
_COLUMN_LINE = re.compile(r"^(\s*)(\"?[A-Za-z_][\w$]*\"?)(\s+\S.*)$")


def _bare(name: str) -> str:
    """`public."Orders"` -> `Orders`: the table or column name a COMMENT statement and a CREATE TABLE share."""
    return name.split(".")[-1].strip('"')


def describe_fixture(files: Iterable[FixtureFile]) -> str:
    """The DDL of fixture files (no data, no functions): a schema without a database. Each COMMENT ON TABLE /
    COLUMN is written beside the table or column it describes (`-- ...`), where a model reads it with the
    column, rather than as a separate statement many lines later."""
    from bot.db.statements import UnsafeSQL, split_statements

    kept: list[str] = []
    for f in files:
        try:
            statements = split_statements(f.text())
        except (CaseFileError, UnsafeSQL):
            continue
        for st in statements:
            lines = [ln for ln in st.text.splitlines() if not ln.strip().startswith("--")]
            text = "\n".join(lines).strip()
            if " ".join(text.split()[:4]).upper().startswith(_KEEP):
                kept.append(text + ";")
    return _attach_comments(kept)


def _attach_comments(statements: list[str]) -> str:
    tables: dict[str, str] = {}
    columns: dict[tuple[str, str], str] = {}
    created = {_bare(m.group(1)) for st in statements if (m := _CREATE_TABLE.match(st))}
    out: list[str] = []
    for st in statements:
        m = _COMMENT.match(st)
        if m is None:
            out.append(st)
            continue
        pieces = re.findall(r"'((?:[^']|'')*)'", m["text"])  # 'a' 'b' on separate lines is one literal
        text = " ".join("".join(pieces).replace("''", "'").split())
        parts = [p.strip('"') for p in m["target"].split(".")]
        if m["kind"].upper() == "TABLE" and parts[-1] in created:
            tables[parts[-1]] = text
        elif m["kind"].upper() == "COLUMN" and len(parts) >= 2 and parts[-2] in created:
            columns[(parts[-2], parts[-1])] = text
        else:
            out.append(st)  # on a view or something else: kept as it is
    rendered = [_annotate(st, tables, columns) for st in out]
    return "\n".join(rendered) + ("\n" if rendered else "")


def _annotate(statement: str, tables: dict[str, str], columns: dict[tuple[str, str], str]) -> str:
    m = _CREATE_TABLE.match(statement)
    if m is None:
        return statement
    table = _bare(m.group(1))
    lines = statement.splitlines()
    for i, line in enumerate(lines[1:], start=1):
        col = _COLUMN_LINE.match(line)
        note = columns.get((table, col.group(2).strip('"'))) if col else None
        if note:
            lines[i] = f"{line}  -- {note}"
    head = f"-- {tables[table]}\n" if table in tables else ""
    return head + "\n".join(lines)
