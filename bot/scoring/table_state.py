"""What the rules of a table comparison (table_rules.py) share: the pair being compared with what the rules so
far found out about it (the Comparison each rule reads and adds to), and the verdict a rule returns when it
decides."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.base.results import ResultSet
from bot.scoring.row_matching import OrderCheck
from bot.scoring.table_options import TableOptions


@dataclass(frozen=True)
class TableVerdict:
    match: bool | None
    kind: str
    message: str
    flags: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    mapping: tuple[int, ...] | None = None  # gold column i is prediction column mapping[i]


@dataclass
class Comparison:
    """One gold/prediction pair under comparison. The rules fill in the rest in order: the flags of the verdict,
    the normalised rows (`g`, `p`), the column mappings under which the rows differ (`tried`, for the first
    difference) and why the last mapping whose rows matched failed the order check (`order_fail`)."""

    gold: ResultSet
    pred: ResultSet
    opts: TableOptions
    order: OrderCheck | None = None
    keys: Callable[[], Sequence[tuple[int, ...]]] | None = None
    flags: list[str] = field(default_factory=list)
    g: list = field(default_factory=list)
    p: list = field(default_factory=list)
    tried: list[tuple[int, ...]] = field(default_factory=list)
    order_fail: str | None = None

    def verdict(
        self,
        match: bool | None,
        kind: str,
        message: str,
        details: dict[str, Any] | None = None,
        mapping: tuple[int, ...] | None = None,
    ) -> TableVerdict:
        """A verdict carrying the flags raised so far."""
        return TableVerdict(match, kind, message, tuple(self.flags), details or {}, mapping)


# A rule decides (returns a verdict) or lets the next rule look (returns None).
Rule = Callable[[Comparison], TableVerdict | None]
