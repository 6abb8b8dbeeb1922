"""Which of a pull request's KB changes broke each regressed case: causal, by delta debugging, not by citation.

For a regressed case, reverting every KB change (the head's tree otherwise) is asked first: when the case still
fails, it is "not caused by the KB" (the agent, the model, a non-KB file or flakiness). Otherwise ddmin (Zeller
and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", 2002) finds a 1-minimal set of changes
whose revert makes it pass: reverting the set passes, reverting any one change less does not. Only the case
itself is asked again, each configuration at most once (memoised here; the evaluator's answer cache, keyed by
the agent and KB fingerprints, makes a configuration asked in an earlier check free too). No `used` is needed:
the answers are asked, not read.

The evaluator (bot.attribution.evaluator.TreeEvaluator, or a fake in tests) runs given cases with given changes
reverted and counts the agent calls it made; `max_agent_calls` bounds them, and a case left when they are
spent is "undecided".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Literal, NamedTuple, Protocol

from bot.attribution.hunks import Change, ChangeSet
from bot.base.results import FrozenModel

CaseVerdict = Literal["caused", "not_kb", "undecided"]
NOT_KB = (
    "not caused by the KB: reverting every KB change of the pull request does not make it pass (an agent, "
    "model or other file change, or flakiness)"
)


class Status(NamedTuple):
    status: str  # a CaseResult status: passed, failed, invalid, errored
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class Evaluator(Protocol):
    """Runs cases of the suite on the head's tree with some of the KB changes reverted."""

    @property
    def agent_calls(self) -> int:
        """Agent calls made so far (answers from the cache not counted)."""
        ...

    def evaluate(self, reverted: frozenset[int], ids: Sequence[str]) -> dict[str, Status]:
        """{case id: its status} of the cases `ids` with the changes `reverted` (ChangeSet ids) undone."""
        ...


class BudgetSpent(Exception):
    """The agent call budget is spent: the attribution stops where it is."""


class CaseCause(FrozenModel):
    id: str
    verdict: CaseVerdict
    changes: tuple[int, ...] = ()  # the causal changes (ids into Attribution.changes), when "caused"
    reason: str = ""
    asked: int = 0  # configurations asked for this case (answers the memo held not counted)


class Attribution(FrozenModel):
    changes: tuple[Change, ...]  # every KB change of the pull request (ChangeSet.changes)
    cases: tuple[CaseCause, ...]
    asked: int = 0  # case runs asked of the evaluator
    agent_calls: int = 0  # the agent calls they cost (answers from the cache are free)
    stopped: str = ""  # why the attribution stopped early (the call budget)

    @property
    def causal(self) -> tuple[int, ...]:
        """The union of every case's causal changes, in the pull request's order."""
        return tuple(sorted({i for c in self.cases for i in c.changes}))

    def of(self, case_id: str) -> CaseCause:
        return next(c for c in self.cases if c.id == case_id)

    def causes(self, case_id: str) -> tuple[Change, ...]:
        return tuple(self.changes[i] for i in self.of(case_id).changes)


def ddmin(items: Sequence[int], test: Callable[[frozenset[int]], bool]) -> tuple[int, ...]:
    """A 1-minimal subset of `items` for which `test` holds, given that it holds for all of them (ddmin)."""
    current = list(items)
    n = 2
    while len(current) >= 2:
        size = len(current)
        chunks = [current[size * k // n : size * (k + 1) // n] for k in range(n)]
        chunks = [c for c in chunks if c]
        found = next((c for c in chunks if test(frozenset(c))), None)
        if found is not None:  # reduce to a subset
            current, n = found, 2
            continue
        # reduce to a complement (with two chunks, each complement is the other chunk: already asked)
        complements = ([x for x in current if x not in c] for c in chunks) if n > 2 else iter(())
        rest = next((r for r in complements if test(frozenset(r))), None)
        if rest is not None:
            current, n = rest, max(n - 1, 2)
            continue
        if n >= size:
            break
        n = min(size, 2 * n)
    return tuple(current)


class _Asker:
    """Asks the evaluator, each (configuration, case) once, within the call budget."""

    def __init__(self, evaluator: Evaluator, max_agent_calls: int | None) -> None:
        self.evaluator = evaluator
        self.start = evaluator.agent_calls
        self.max = max_agent_calls
        self.memo: dict[tuple[frozenset[int], str], Status] = {}
        self.asked = 0

    @property
    def calls(self) -> int:
        return self.evaluator.agent_calls - self.start

    def ask(self, reverted: frozenset[int], ids: Sequence[str]) -> dict[str, Status]:
        todo = [i for i in ids if (reverted, i) not in self.memo]
        if todo:
            if self.max is not None and self.calls >= self.max:
                raise BudgetSpent(f"the agent call budget for attribution is spent ({self.max} calls)")
            got = self.evaluator.evaluate(reverted, todo)
            self.asked += len(todo)
            for i in todo:
                self.memo[(reverted, i)] = got.get(i, Status("errored", "the evaluator gave no result"))
        return {i: self.memo[(reverted, i)] for i in ids}


def attribute(
    regressed: Collection[str],
    changes: ChangeSet,
    evaluator: Evaluator,
    *,
    max_agent_calls: int | None = 200,
) -> Attribution:
    """For each regressed case id, the smallest set of the KB changes whose revert makes it pass again, or
    "not caused by the KB". Every regressed case is asked once with every change reverted (one run), then each
    caused case alone, by ddmin over the changes."""
    asker = _Asker(evaluator, max_agent_calls)
    ids = sorted(regressed)
    every = changes.ids
    out: dict[str, CaseCause] = {}
    stopped = ""
    try:
        if not every:
            out = {
                i: CaseCause(id=i, verdict="not_kb", reason="the pull request changed no KB file")
                for i in ids
            }
        else:
            whole = asker.ask(every, ids)
            for i in ids:
                if not whole[i].passed:
                    out[i] = CaseCause(id=i, verdict="not_kb", reason=NOT_KB, asked=1)
            for i in ids:
                if i in out:
                    continue
                before = asker.asked

                def passes(reverted: frozenset[int], case: str = i) -> bool:
                    return reverted == every or (bool(reverted) and asker.ask(reverted, [case])[case].passed)

                found = ddmin(sorted(every), passes)
                out[i] = CaseCause(id=i, verdict="caused", changes=found, asked=1 + asker.asked - before)
    except BudgetSpent as exc:
        stopped = str(exc)
    for i in ids:
        out.setdefault(i, CaseCause(id=i, verdict="undecided", reason=stopped))
    return Attribution(
        changes=changes.changes,
        cases=tuple(out[i] for i in ids),
        asked=asker.asked,
        agent_calls=asker.calls,
        stopped=stopped,
    )
