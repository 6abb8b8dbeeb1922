"""What the repair pull request's body is built from, as the report layer reads it.

bot.repair and bot.report are sibling layers that never import each other (pyproject's import-linter
contract), so the body's view (bot.report.repair_view) reads a repair's results through these protocols:
bot.repair.outcome.RepairOutcome satisfies `OutcomeSource`, bot.attribution.revert.RevertCandidate satisfies
`RevertSource`, and mypy checks it where a command passes them. Every member is read-only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from bot.base.results import LLMUsage


class AttemptSource(Protocol):
    """One attempt at a case (bot.repair.outcome.AttemptRecord, CritiqueRecord)."""

    @property
    def outcome(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def plan(self) -> Mapping[str, Any] | None: ...

    @property
    def diff(self) -> str: ...


class CaseSource(Protocol):
    """One failing case the loop worked on (bot.repair.outcome.CaseRepair)."""

    @property
    def id(self) -> str: ...

    @property
    def repaired(self) -> bool: ...

    @property
    def attempts(self) -> Sequence[AttemptSource]: ...

    @property
    def last_reason(self) -> str: ...


class OutcomeSource(Protocol):
    """What the repair loop did (bot.repair.outcome.RepairOutcome)."""

    @property
    def cases(self) -> Sequence[CaseSource]: ...

    @property
    def skipped(self) -> Sequence[str]: ...

    @property
    def critique(self) -> Sequence[AttemptSource]: ...

    @property
    def files_changed(self) -> Sequence[str]: ...

    @property
    def kb_diff(self) -> str: ...

    @property
    def issues_found(self) -> Sequence[str]: ...

    @property
    def improvements_made(self) -> Sequence[str]: ...

    @property
    def llm(self) -> LLMUsage: ...

    @property
    def final_statuses(self) -> Mapping[str, str]: ...

    @property
    def stopped(self) -> str | None: ...


class ChangeSource(Protocol):
    """One KB line change of the source pull request (bot.attribution.hunks.Change)."""

    @property
    def file(self) -> str: ...

    def describe(self) -> str: ...


class RevertCaseSource(Protocol):
    """One case run with the partial revert (bot.attribution.revert.CaseOutcome)."""

    @property
    def id(self) -> str: ...

    @property
    def reverted(self) -> str: ...

    @property
    def verdict(self) -> str: ...

    @property
    def reason(self) -> str: ...


class RevertSource(Protocol):
    """The verified partial revert (bot.attribution.revert.RevertCandidate)."""

    @property
    def holds(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    @property
    def reverted(self) -> Sequence[ChangeSource]: ...

    @property
    def kept(self) -> Sequence[ChangeSource]: ...

    @property
    def files(self) -> Mapping[str, str | None]: ...

    @property
    def diff(self) -> str: ...

    @property
    def cases(self) -> Sequence[RevertCaseSource]: ...

    @property
    def restored(self) -> Sequence[str]: ...

    @property
    def agent_calls(self) -> int: ...
