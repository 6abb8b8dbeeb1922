"""The KB repair loop: failure contexts, LLM plans validated against path-safety and KB rules, edits applied
in a crash-safe transaction and proven on PostgreSQL against the whole suite. Entry point: `repair(...)`."""

from __future__ import annotations

from bot.kb.files import KBFiles, RefusedPath
from bot.repair.outcome import RepairOutcome
from bot.repair.transaction import Transaction, recover

__all__ = ["KBFiles", "RefusedPath", "RepairOutcome", "Transaction", "recover", "repair"]


def __getattr__(name: str):
    if name == "repair":
        from bot.repair.request import repair

        return repair
    raise AttributeError(name)
