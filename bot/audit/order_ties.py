"""`order_ties`: a gold whose answer depends on ties or an order it does not fix: a LIMIT/OFFSET (or FETCH FIRST)
cutting through rows with equal ORDER BY keys, a LIMIT with no ORDER BY over more rows than it keeps, a DISTINCT
ON whose groups' first rows tie. Only ties the fixture really has, whose rows differ (the answer would change)."""

from __future__ import annotations

from bot.audit.context import CaseAudit
from bot.audit.cut_sql import Cut, distinct_on_probe, keyed_probe, the_cut, widened
from bot.audit.model import Suspect, plain, plain_rows
from bot.audit.ties import Tie, distinct_on_ties, split_ties
from bot.scoring.order import key_positions, order_info


def _evidence(cut: Cut | None, ties: list[Tie], columns: tuple[str, ...]) -> dict:
    tie = ties[0]
    evidence: dict = {
        "boundary": tie.boundary,
        "columns": list(columns),
        "tie_key": [plain(v) for v in tie.key],
        "kept": plain_rows(list(tie.kept)),
        "left_out": plain_rows(list(tie.left_out)),
        "ties": len(ties),
    }
    if cut is not None:
        evidence.update(limit=cut.limit, offset=cut.offset, ordered=cut.ordered)
    return evidence


def _cut_ties(audit: CaseAudit, sql: str, cut: Cut) -> list[Tie] | None:
    gold = audit.gold()
    assert gold is not None
    key_cols: tuple[int, ...]
    if not cut.ordered:
        probe_sql = widened(sql, cut)
        n_out, key_cols = len(gold.columns), ()
    else:
        probe = keyed_probe(sql, cut)
        if probe is not None:
            probe_sql, n_out = probe.sql, probe.n_out
            key_cols = tuple(range(probe.n_out, probe.n_out + probe.n_keys))
        else:  # DISTINCT or a set operation: the keys must be outputs
            info = order_info(sql)
            positions = key_positions(sql, info, gold.columns)
            if positions is None:
                return None
            probe_sql, n_out, key_cols = widened(sql, cut), len(gold.columns), positions
    if probe_sql is None:
        return None
    out = audit.fetch(probe_sql)
    if not out.ok or out.result is None:
        return None
    return split_ties(
        out.result.rows, n_out=n_out, key_cols=key_cols, start=cut.offset, stop=cut.offset + cut.limit
    )


def detect_order_ties(audit: CaseAudit) -> list[Suspect]:
    gold = audit.gold()
    if gold is None or not gold.rows:
        return []
    sql = audit.gold_sql()
    cut = the_cut(sql)
    if cut is not None and (len(gold.rows) == cut.limit or cut.offset):  # fewer rows: the end cut nothing
        ties = _cut_ties(audit, sql, cut)
        if ties:
            first = ties[0]
            window = f"LIMIT {cut.limit}{f' OFFSET {cut.offset}' if cut.offset else ''}"
            n = len(first.kept) + len(first.left_out)
            message = (
                f"{window} cuts through {n} rows that tie on the ORDER BY key: {len(first.left_out)} equally "
                "ranked row(s) left out could be returned instead"
                if cut.ordered
                else f"{window} with no ORDER BY keeps {len(first.kept)} of {n} different rows: which ones is "
                "up to the server's plan"
            )
            return [
                audit.suspect(
                    "order_ties",
                    "high",
                    message,
                    _evidence(cut, ties, gold.columns),
                )
            ]
    probe = distinct_on_probe(sql)
    if probe is not None:
        out = audit.fetch(probe.sql)
        if out.ok and out.result is not None:
            ties = distinct_on_ties(
                out.result.rows, n_out=probe.n_out, n_distinct=probe.n_distinct, n_keys=probe.n_keys
            )
            if ties:
                return [
                    audit.suspect(
                        "order_ties",
                        "high",
                        f"DISTINCT ON picks one row of {len(ties)} group(s) among rows that tie on the ORDER BY: "
                        "which one is returned is not fixed",
                        _evidence(None, ties, gold.columns),
                    )
                ]
    return []
