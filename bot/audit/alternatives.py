"""`alternatives_disagree`: a case whose gold alternatives return different answers under the case's own
comparison (the judge's: bot.run.query_cases.judge_pair), neither accepting the other. Variants of one written
gold that differ only in which columns they name (defog's `{a, b}` column choices) are one answer, not two."""

from __future__ import annotations

import difflib

from sqlglot import tokenize
from sqlglot.tokens import TokenType

from bot.audit.context import CaseAudit
from bot.audit.loose import compatible, shared_projection
from bot.audit.model import Suspect, plain, plain_rows
from bot.base.results import ResultSet
from bot.db.session import Session
from bot.run.query_cases import judge_pair

# Tokens a column-choice expansion changes: names, their dots and the commas between them.
_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.DOT, TokenType.COMMA})


def _tokens(sql: str) -> tuple[list[tuple[TokenType, str]], list[bool]] | None:
    """The tokens, and whether each is part of a name (a word after a dot is a name even when it is a keyword
    such as `name` or `number`)."""
    try:
        tokens = [(t.token_type, t.text.lower()) for t in tokenize(sql, read="postgres")]
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds
        return None
    names = [
        kind in _NAME_TOKENS or (i > 0 and tokens[i - 1][0] == TokenType.DOT and kind != TokenType.STAR)
        for i, (kind, _) in enumerate(tokens)
    ]
    return tokens, names


def column_choice_siblings(a: str, b: str) -> bool:
    """Two golds that differ only in names (and the dots and commas between them): variants of one gold with
    another choice of columns, as bot.cases.choices expands them."""
    ta, tb = _tokens(a), _tokens(b)
    if ta is None or tb is None:
        return False
    matcher = difflib.SequenceMatcher(None, ta[0], tb[0], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal" and not (all(ta[1][i1:i2]) and all(tb[1][j1:j2])):
            return False
    return True


def sibling_groups(golds: tuple[str, ...]) -> list[list[int]]:
    """Alternatives grouped by the written gold they come from (consecutive column-choice variants)."""
    groups: list[list[int]] = []
    for i, sql in enumerate(golds):
        if groups and column_choice_siblings(golds[groups[-1][0]], sql):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _accepts(session: Session, audit: CaseAudit, results: list[ResultSet], i: int, j: int) -> bool:
    """Alternative i, as the gold, accepts alternative j's result as a prediction (both run on `session`)."""
    verdict = judge_pair(
        session, audit.case, audit.gold_sql(i), results[i], audit.gold_sql(j), results[j], audit.options, i
    )
    return bool(verdict.match)


def agree_on(session: Session, audit: CaseAudit, results: list[ResultSet], i: int, j: int) -> bool:
    """The judge accepts one alternative's result for the other's; or, on the columns both have (bot/audit/loose.py),
    they are format variants or one reading within the other; or they share no column to disagree on. `results`
    are the alternatives' results on the database `session` reads (the real data, or a perturbed copy)."""
    if _accepts(session, audit, results, i, j) or _accepts(session, audit, results, j, i):
        return True
    gi, gj = results[i], results[j]
    shared = shared_projection(gi.columns, gi.rows, gj.columns, gj.rows)
    return shared is None or compatible(*shared)


def agree_on_real(audit: CaseAudit, i: int, j: int) -> bool:
    results = [audit.gold(k) for k in range(len(audit.golds))]
    assert all(r is not None for r in results)
    return agree_on(audit.session, audit, results, i, j)  # type: ignore[arg-type]


def only_in(a: ResultSet, b: ResultSet) -> list[list]:
    theirs = {repr([plain(v) for v in row]) for row in b.rows}
    return [list(r) for r in plain_rows([r for r in a.rows if repr([plain(v) for v in r]) not in theirs], 3)]


def detect_alternatives(audit: CaseAudit) -> list[Suspect]:
    if len(audit.golds) < 2 or not all(g.ok for g in audit.golds):
        return []
    groups = sibling_groups(audit.case.gold_sql)
    if len(groups) < 2:
        return []
    first = groups[0]
    out: list[Suspect] = []
    for other in groups[1:]:
        if any(agree_on_real(audit, i, j) for i in first for j in other):
            continue
        i, j = first[-1], other[-1]
        gi, gj = audit.gold(i), audit.gold(j)
        assert gi is not None and gj is not None
        same_count = len(gi.rows) == len(gj.rows)
        out.append(
            audit.suspect(
                "alternatives_disagree",
                "medium" if same_count else "high",
                f"gold alternatives #{i + 1} and #{j + 1} return different results ({len(gi.rows)} vs "
                f"{len(gj.rows)} row(s)): a prediction passes or fails by which one it happens to match",
                {
                    "alternatives": [i + 1, j + 1],
                    "row_counts": [len(gi.rows), len(gj.rows)],
                    "columns": [list(gi.columns), list(gj.columns)],
                    "only_in_first": only_in(gi, gj),
                    "only_in_second": only_in(gj, gi),
                },
            )
        )
    return out
