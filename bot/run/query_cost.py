"""The planner's cost of a query case: for a query case whose prediction ran, the EXPLAIN estimate (nothing runs)
of the prediction and of the gold it was judged against, recorded as the case's `query_cost`.

A query's estimate depends only on its text and on the data it is planned on, which the database's template
names (the name carries the fixture's fingerprint). So each (template, text) is explained once: kept in the
run's memo (shared by the worker threads) and, across runs, in `query-costs.json` in the cache folder, as
perturb-rankings.json keeps the rankings of perturbed copies. A warm run of the gold agent, whose predictions are
the golds' own text, explains nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from bot.base.usage import QueryCost
from bot.db.plans import Estimate
from bot.db.session import Session

MAX_KEPT = 200_000  # estimates the file keeps (the newest): a few MB at most


class CostMemo:
    """A run's estimates by (template, SQL text): those of the file it was read from and those it explains."""

    def __init__(self, path: Path | None = None) -> None:
        self._file = path
        self._known = _read_costs(path)
        self._new: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def on(self, template: str) -> TemplatePlans:
        """The memo as a session on a copy of `template` uses it (bot.db.plans.PlanMemo)."""
        return TemplatePlans(self, template)

    def get(self, template: str, sql: str) -> Estimate | None:
        with self._lock:
            found = self._known.get(_cost_key(template, sql))
        return Estimate(*found) if found is not None else None

    def put(self, template: str, sql: str, estimate: Estimate) -> None:
        key, value = _cost_key(template, sql), [estimate.cost, estimate.rows]
        with self._lock:
            self._known[key] = self._new[key] = value

    def save(self) -> None:
        """Add what this run explained to the file (merged with what other runs wrote meanwhile), atomically;
        at most MAX_KEPT estimates, the newest. The file is a cache: a failure to write it is not an error."""
        if self._file is None:
            return
        with self._lock:
            new = dict(self._new)
        if not new:
            return
        merged = _read_costs(self._file)
        for key in new:
            merged.pop(key, None)  # re-added at the end: the newest
        merged.update(new)
        kept = dict(list(merged.items())[-MAX_KEPT:])
        tmp = self._file.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(kept, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, self._file)
        except OSError:
            tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class TemplatePlans:
    """A CostMemo's estimates on one template (what bot.db.session.Session.plans holds)."""

    memo: CostMemo
    template: str

    def get(self, sql: str) -> Estimate | None:
        return self.memo.get(self.template, sql)

    def put(self, sql: str, estimate: Estimate) -> None:
        self.memo.put(self.template, sql, estimate)


def query_cost(session: Session, gold_sql: str, pred_sql: str) -> QueryCost | None:
    """The estimates of the gold and of the prediction (both as they ran), from the session's memo or explained
    in the case's open transaction (the caller rolls it back), from the guard settings whatever the prediction
    set. A query that cannot be explained has none; None when neither has one."""
    memo = session.plans
    found = {sql: memo.get(sql) if memo is not None else None for sql in (gold_sql, pred_sql)}
    missing = [sql for sql, estimate in found.items() if estimate is None]
    if missing and not session.in_failed_transaction():
        session.fresh()
        for sql in missing:
            try:
                cost, rows, error = session.explain_plan(sql)
            except (LookupError, TypeError, ValueError):  # a plan of a shape not known: no estimate
                continue
            if error is not None or cost is None or rows is None:
                break  # the transaction has failed: the other query cannot be explained in it either
            found[sql] = estimate = Estimate(cost, rows)
            if memo is not None:
                memo.put(sql, estimate)
    gold, pred = found.get(gold_sql), found.get(pred_sql)
    if gold is None and pred is None:
        return None
    return QueryCost(
        prediction=pred.cost if pred else None,
        gold=gold.cost if gold else None,
        prediction_rows=pred.rows if pred else None,
        gold_rows=gold.rows if gold else None,
    )


def _cost_key(template: str, sql: str) -> str:
    return hashlib.sha256(json.dumps([template, sql]).encode()).hexdigest()[:24]


def _valid(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            for v in value
        )
    )


def _read_costs(path: Path | None) -> dict[str, list[float]]:
    """The file's estimates; a file that cannot be read or is not a JSON object gives none, and an entry of
    another shape is left out (it is a cache)."""
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: [float(v[0]), float(v[1])] for k, v in data.items() if isinstance(k, str) and _valid(v)}
