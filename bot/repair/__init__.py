"""The KB repair loop: failure contexts, LLM plans validated against path-safety and KB rules, edits applied
in a crash-safe transaction and proven on PostgreSQL against the whole suite. Entry point: `repair(...)`."""

from __future__ import annotations

from bot.repair.kb import KBFiles, RefusedPath, Transaction, recover
from bot.repair.outcome import RepairOutcome

__all__ = ["KBFiles", "RefusedPath", "RepairOutcome", "Transaction", "recover", "repair"]


def __getattr__(name: str):
    if name == "repair":
        from bot.repair.loop import repair

        return repair
    raise AttributeError(name)
