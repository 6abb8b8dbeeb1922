"""`gold_fails_on_perturbed` (`--perturb K`): gold alternatives that agree on the real data but not on a perturbed
copy of it. Alternatives are different readings of one question; when the data happen not to separate them, the
copies the run already builds for `--perturb` (bot.run.perturb_setup, bot.run.perturbed) often do, and then a
prediction passes or fails by which reading it took. The copies are the K a run judges the case on (the ranking
of its first gold, bot.run.perturbed.Copies.ranking); each alternative runs there read-only and rolled back, and
two results agree as they do on the real data (bot.audit.alternatives.agree_on: the judge, then the loose
comparison of shared columns)."""

from __future__ import annotations

from bot.audit.alternatives import agree_on, agree_on_real, only_in, sibling_groups
from bot.audit.context import CaseAudit
from bot.audit.model import Suspect
from bot.base.results import ResultSet
from bot.run.perturb_relevance import relevant_first

MAX_CHANGES_SHOWN = 5


def _pairs_agreeing_on_real(audit: CaseAudit) -> list[tuple[list[int], list[int]]]:
    """(the first written gold's alternatives, another's) for each other written gold that agrees with the first
    on the real data: those that do not are `alternatives_disagree` already."""
    groups = sibling_groups(audit.case.gold_sql)
    if len(groups) < 2:
        return []
    first = groups[0]
    return [(first, o) for o in groups[1:] if any(agree_on_real(audit, i, j) for i in first for j in o)]


def _results_on_copy(audit: CaseAudit, copy: int) -> list[ResultSet | None]:
    assert audit.copies is not None
    session = audit.copies.session(audit.case.db, copy)
    outcomes = [session.fetch(audit.gold_sql(i), savepoint=True) for i in range(len(audit.golds))]
    return [o.result if o.ok else None for o in outcomes]


def detect_perturbed(audit: CaseAudit) -> list[Suspect]:
    if audit.copies is None or not audit.on_copies or not all(g.ok for g in audit.golds):
        return []
    pending = _pairs_agreeing_on_real(audit)
    out: list[Suspect] = []
    for copy in audit.on_copies:
        if not pending:
            break
        session = audit.copies.session(audit.case.db, copy)
        session.begin(read_only=True)
        try:
            results = _results_on_copy(audit, copy)
            for first, other in list(pending):
                pairs = [
                    (i, j) for i in first for j in other if results[i] is not None and results[j] is not None
                ]
                if not pairs or any(agree_on(session, audit, results, i, j) for i, j in pairs):  # type: ignore[arg-type]
                    continue  # an alternative that fails on the copy (a timeout, a cast) says nothing here
                pending.remove((first, other))
                out.append(_suspect(audit, copy, _shown(pairs, results), results))
        finally:
            session.rollback()
    return out


def _shown(pairs: list[tuple[int, int]], results: list[ResultSet | None]) -> tuple[int, int]:
    """The pair whose rows say the most: the same columns first, then the most columns in common."""

    def score(pair: tuple[int, int]) -> tuple[bool, int]:
        a, b = results[pair[0]], results[pair[1]]
        assert a is not None and b is not None
        return list(a.columns) != list(b.columns), -len(set(a.columns) & set(b.columns))

    return min(pairs, key=score)


def _suspect(audit: CaseAudit, copy: int, pair: tuple[int, int], results: list[ResultSet | None]) -> Suspect:
    assert audit.copies is not None
    i, j = pair
    ci, cj = results[i], results[j]
    ri, rj = audit.gold(i), audit.gold(j)
    assert ci is not None and cj is not None and ri is not None and rj is not None
    changes = relevant_first(
        audit.copies.changes(audit.case.db, copy), (audit.gold_sql(i), audit.gold_sql(j))
    )
    return audit.suspect(
        "gold_fails_on_perturbed",
        "medium",
        f"gold alternatives #{i + 1} and #{j + 1} agree on the real data but not on perturbed copy {copy + 1} "
        f"({len(ci.rows)} vs {len(cj.rows)} row(s)): they are different readings of the question that the data "
        "happen not to separate, and a prediction passes or fails by which one it took",
        {
            "alternatives": [i + 1, j + 1],
            "copy": copy + 1,
            "changes": list(changes[:MAX_CHANGES_SHOWN]),
            "row_counts_real": [len(ri.rows), len(rj.rows)],
            "row_counts_copy": [len(ci.rows), len(cj.rows)],
            "only_in_first": only_in(ci, cj),
            "only_in_second": only_in(cj, ci),
        },
    )
