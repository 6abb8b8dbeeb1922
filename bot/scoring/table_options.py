"""The options of one table comparison (compare_tables and its rules, table_rules.py), each resolved to a value.

The case model's CompareOptions (bot/cases/model.py) is where an option is declared for users: its name, the values
it takes and their validation, as written in YAML. A table option is a CompareOptions field of the same name; here
it gets the value the comparison uses when no layer sets it, and `from_compare` carries every one over by name,
so no conversion is written by hand (tests/unit/test_table_rules.py checks the two stay in step)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from bot.cases.model import CompareOptions
from bot.scoring.values import DEFAULT_ABS_TOL, DEFAULT_REL_TOL


@dataclass(frozen=True)
class TableOptions:
    rows: Literal["multiset", "set"] = "multiset"
    columns: Literal["positional", "permute", "subset"] = "permute"
    abs_tol: float = DEFAULT_ABS_TOL
    rel_tol: float = DEFAULT_REL_TOL
    bool_is_int: bool = False
    datetime_as_date: bool = False
    empty_gold_fails: bool = False

    @classmethod
    def from_compare(cls, options: CompareOptions) -> TableOptions:
        """The table options of resolved compare options: the fields they set; the defaults above for the rest."""
        given = {f.name: getattr(options, f.name) for f in fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})
