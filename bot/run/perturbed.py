"""`--perturb K`: a query case that passed on the real data runs again on K perturbed copies of its database
(bot/db/perturb.py), and passes only when the prediction returns the gold's rows on every one of them; one that
matched on the real data only fails as `coincidental`, naming the copy, what the copy changed and the difference.

Which K of the database's copies a case runs on is distilled as the test-suite paper does (Zhong et al. 2020):
the gold's own mutants (bot/scoring/mutants.py) that return the gold's rows on the real data are the wrong
queries to separate, and the copies that separate the most of them come first; then the other copies on which
the gold runs and returns rows. The ranking is computed once per gold and pool, and kept in a file beside the
answer cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

from bot.base.results import ResultSet, Verdict
from bot.cases.model import Case, CompareOptions
from bot.db.perturb import Clones, read_changes
from bot.db.session import Outcome, Session
from bot.run.evaluation import Evaluation
from bot.run.perturb_plan import POOL_MIN
from bot.run.perturb_relevance import relevant_first
from bot.run.query_cases import as_compared, judge_pair
from bot.scoring.execution import judge_results
from bot.scoring.mutants import gold_mutants

MUTANTS = 8  # of the gold's own mutants tried per gold when ranking copies


SESSIONS_KEPT = 48  # sessions on perturbed copies the workers keep open, shared out (the least recently used
# is closed): a defog run's 44 copies stay open on 2 workers, far under a server's 100 connections


class Copies:
    """The run's working copies of each database's perturbed copies, with per-thread sessions (a worker keeps
    sessions it used last open, whichever databases they are on: its share of SESSIONS_KEPT, at least a pool's),
    and each gold's ranking of them."""

    def __init__(
        self,
        clones: Clones,
        *,
        timeout_ms: int,
        row_cap: int,
        rankings: Path | None = None,
        workers: int = 1,
    ) -> None:
        self.clones = clones
        self.kept = max(POOL_MIN, SESSIONS_KEPT // max(workers, 1))
        self.timeout_ms, self.row_cap = timeout_ms, row_cap
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[Session] = []
        self._changes: dict[str, tuple[str, ...]] = {}
        self._file = rankings
        self._rankings: dict[str, list[int]] = _read_rankings(rankings)
        self._new = False

    def session(self, db: str, i: int) -> Session:
        kept: OrderedDict[tuple[str, int], Session] = self._local.__dict__.setdefault(
            "sessions", OrderedDict()
        )
        key = (db, i)
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
        while len(kept) >= self.kept:
            _, old = kept.popitem(last=False)
            old.close()
        s = Session(self.clones.get(db, i).dsn, statement_timeout_ms=self.timeout_ms, row_cap=self.row_cap)
        kept[key] = s
        with self._lock:
            self._all.append(s)
        return s

    def changes(self, db: str, i: int) -> tuple[str, ...]:
        clone = self.clones.get(db, i)
        if clone.template not in self._changes:
            self._changes[clone.template] = read_changes(clone.dsn)
        return self._changes[clone.template]

    def close(self) -> None:
        for s in self._all:
            s.close()
        self.save()

    def save(self) -> None:
        if self._file is None or not self._new:
            return
        merged = {**_read_rankings(self._file), **self._rankings}
        self._file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(merged, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self._file)

    def ranking(self, case: Case, gold_sql: str, real: Session, options: CompareOptions) -> list[int]:
        key = _ranking_key(self.clones.pools[case.db], gold_sql, options)
        with self._lock:
            known = self._rankings.get(key)
        if known is None:
            known = self._rank(case, gold_sql, real, options)
            with self._lock:
                self._rankings[key] = known
                self._new = True
        return known

    def _rank(self, case: Case, gold_sql: str, real: Session, options: CompareOptions) -> list[int]:
        real.begin(read_only=True)
        try:
            gold = real.fetch(gold_sql, savepoint=True)
            if not gold.ok or gold.result is None:
                return []
            survivors = []
            for m in gold_mutants(gold_sql, limit=MUTANTS):
                out = real.fetch(as_compared(m, options), savepoint=True)
                if out.ok and out.result is not None and _same(case, gold_sql, gold.result, out, options):
                    survivors.append(as_compared(m, options))
        finally:
            real.rollback()
        useful: list[int] = []
        kills: dict[int, set[int]] = {}
        for i in range(self.clones.count(case.db)):
            s = self.session(case.db, i)
            s.begin(read_only=True)
            try:
                g = s.fetch(gold_sql, savepoint=True)
                if not g.ok or g.result is None or (gold.result.rows and not g.result.rows):
                    continue  # the gold fails or returns nothing on this copy: it cannot judge
                useful.append(i)
                kills[i] = {
                    j
                    for j, m in enumerate(survivors)
                    if not _same(case, gold_sql, g.result, s.fetch(m, savepoint=True), options)
                }
            finally:
                s.rollback()
        return _greedy(useful, kills)

    def agrees_on_real(
        self, case: Case, gold_sql: str, pred_sql: str, real: Session, options: CompareOptions
    ) -> bool:
        """Whether the answer returns this gold alternative's rows on the real data."""
        gold_sql, pred_sql = as_compared(gold_sql, options), as_compared(pred_sql, options)
        real.begin(read_only=True)
        try:
            gold = real.fetch(gold_sql, savepoint=True)
            pred = real.fetch(pred_sql)
            if not (gold.ok and pred.ok and gold.result is not None and pred.result is not None):
                return False
            return judge_pair(real, case, gold_sql, gold.result, pred_sql, pred.result, options).match is True
        finally:
            real.rollback()

    def check(
        self, case: Case, gold_sql: str, pred_sql: str, real: Session, options: CompareOptions, k: int
    ) -> Verdict:
        """The `perturbed` verdict of a prediction that matched the gold on the real data."""
        gold_sql, pred_sql = as_compared(gold_sql, options), as_compared(pred_sql, options)
        ranked = self.ranking(case, gold_sql, real, options)
        chosen = [i for i in ranked if i < self.clones.count(case.db)][:k]
        for i in chosen:
            s = self.session(case.db, i)
            s.begin(read_only=True)
            try:
                gold = s.fetch(gold_sql, savepoint=True)
                if not gold.ok or gold.result is None:
                    continue
                pred = s.fetch(pred_sql)
                if pred.ok and pred.result is not None:
                    v = judge_pair(s, case, gold_sql, gold.result, pred_sql, pred.result, options)
                    if v.match is not False:
                        continue
                    difference = v.message
                elif pred.error_class in ("timeout", "connection"):
                    continue
                else:
                    difference = f"the prediction failed there: {pred.error}"
            finally:
                s.rollback()
            changes = relevant_first(self.changes(case.db, i), (gold_sql, pred_sql))
            return _coincidental(i, changes, difference, chosen)
        return Verdict(
            scorer="perturbed",
            match=True,
            kind="agrees_on_copies",
            message=f"the same rows on {len(chosen)} perturbed cop{'y' if len(chosen) == 1 else 'ies'}",
            details={"copies": chosen},
        )


def _coincidental(i: int, changes: tuple[str, ...], difference: str, chosen: list[int]) -> Verdict:
    shown = "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more changes" if len(changes) > 3 else "")
    return Verdict(
        scorer="perturbed",
        match=False,
        kind="coincidental",
        flags=("coincidental",),
        message=f"coincidental: the gold's rows on the real data, but not on perturbed copy {i + 1} "
        f"({shown or 'its changes'}): {difference}",
        details={"copy": i + 1, "changes": list(changes), "difference": difference, "copies": chosen},
    )


def _same(case: Case, gold_sql: str, gold: ResultSet, other: Outcome, options: CompareOptions) -> bool:
    if not other.ok or other.result is None:
        return False
    v = judge_results(
        gold, other.result, options=options, gold_sql=gold_sql, question=case.question, pred_sql=""
    )
    return v.match is True


def _greedy(useful: list[int], kills: dict[int, set[int]]) -> list[int]:
    """The copies that separate the most mutants not yet separated first (the smallest separating set, greedily),
    then the other useful copies in order."""
    left = set().union(*kills.values()) if kills else set()
    order: list[int] = []
    while left:
        best = max(useful, key=lambda i: (len(kills[i] & left), -i))
        if not kills[best] & left:
            break
        order.append(best)
        left -= kills[best]
    return order + [i for i in useful if i not in order]


def _ranking_key(templates: tuple[str, ...], gold_sql: str, options: CompareOptions) -> str:
    text = json.dumps([list(templates), gold_sql, options.model_dump(exclude_none=True)])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _read_rankings(path: Path | None) -> dict[str, list[int]]:
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a cache: rebuilt when unreadable
    if not isinstance(data, dict):
        return {}
    return {
        k: v for k, v in data.items() if isinstance(v, list) and all(isinstance(i, int) and i >= 0 for i in v)
    }


def with_perturbation(
    ev: Evaluation,
    case: Case,
    pred_sql: str,
    real: Session,
    options: CompareOptions,
    copies: Copies | None,
    k: int,
) -> Evaluation:
    """`ev` of a query case's answer that passed, checked on the case's perturbed copies against the gold
    alternative it matched (else against another it also matches on the real data): failed as `coincidental`
    when a copy separates it from every such alternative, else passed with the `perturbed` verdict added."""
    if (
        ev.status != "passed"
        or copies is None
        or k <= 0
        or not copies.clones.count(case.db)
        or not case.gold_sql
    ):
        return ev
    t0 = time.perf_counter()
    matched = ev.alternative or 0
    verdict = copies.check(case, case.gold_sql[matched], pred_sql, real, options, k)
    for other in range(len(case.gold_sql)):  # another alternative the answer also matches may hold everywhere
        if verdict.match is not False:
            break
        if other != matched and copies.agrees_on_real(case, case.gold_sql[other], pred_sql, real, options):
            again = copies.check(case, case.gold_sql[other], pred_sql, real, options, k)
            verdict = again if again.match is not False else verdict
    timings = {**ev.timings, "perturbed_s": time.perf_counter() - t0}
    if verdict.match is not False:
        return replace(ev, verdicts={**ev.verdicts, "perturbed": verdict}, timings=timings)
    return Evaluation(
        status="failed",
        verdicts={**ev.verdicts, "perturbed": verdict},
        deciding="perturbed",
        reason=verdict.message,
        error_class="coincidental",
        alternative=ev.alternative,
        timings=timings,
    )
