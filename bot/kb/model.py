"""The knowledge-base schema: what each KB file may contain (pydantic, frozen, unknown keys rejected).

A KB folder holds `tables.yaml`, `dimensions.yaml`, `metrics/*.yaml` (one metric per file), `snippets/*.sql`,
optional `recipes/*.yaml` (templates for writes and maintenance) and an optional `preferences.yaml`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, model_validator

from bot.base.results import FrozenModel

Aggregation = Literal["sum", "avg", "count", "count_distinct", "min", "max", "ratio"]
AGGREGATIONS: tuple[str, ...] = ("sum", "avg", "count", "count_distinct", "min", "max", "ratio")
IDENTIFIER = r"^[a-z_][a-z0-9_]*$"


class TableDoc(FrozenModel):
    description: str
    columns: dict[str, str] = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    deprecated: bool = False


class TablesFile(FrozenModel):
    tables: dict[str, TableDoc] = Field(min_length=1)


class DimensionValue(FrozenModel):
    """A value as stored in the column (matched case-sensitively) and the names people use for it."""

    value: str
    aliases: tuple[str, ...] = ()


class ValueGroup(FrozenModel):
    name: str
    aliases: tuple[str, ...] = ()
    members: tuple[str, ...] = Field(min_length=1)


class Dimension(FrozenModel):
    name: str = Field(pattern=IDENTIFIER)
    column: str = Field(pattern=IDENTIFIER)
    synonyms: tuple[str, ...] = ()
    description: str = ""
    values: tuple[DimensionValue, ...] = ()
    groups: tuple[ValueGroup, ...] = ()


class TimeGrain(FrozenModel):
    """A breakdown over time; `sql` is a template over `{column}` (the metric's time column)."""

    name: str = Field(pattern=IDENTIFIER)
    synonyms: tuple[str, ...] = ()
    sql: str


class DayFilter(FrozenModel):
    """A named set of days (weekends, ...); `sql` is a condition template over `{column}`."""

    name: str = Field(pattern=IDENTIFIER)
    synonyms: tuple[str, ...] = Field(min_length=1)
    sql: str


class DimensionsFile(FrozenModel):
    dimensions: tuple[Dimension, ...] = Field(min_length=1)
    time_grains: tuple[TimeGrain, ...] = ()
    day_filters: tuple[DayFilter, ...] = ()


class Metric(FrozenModel):
    """One metric. Base metrics aggregate `expression` over `table` (or a snippet); ratios divide two metrics."""

    name: str = Field(pattern=IDENTIFIER)
    description: str
    synonyms: tuple[str, ...] = ()
    aggregation: Aggregation
    table: str | None = None
    snippet: str | None = None
    expression: str | None = None
    numerator: str | None = None
    denominator: str | None = None
    filters: tuple[str, ...] = ()
    time_column: str | None = None
    grain: Literal["day", "week", "month"] = "day"
    dimensions: tuple[str, ...] = ()
    unit: str = ""

    @model_validator(mode="after")
    def _shape(self) -> Metric:
        if self.aggregation == "ratio":
            if not (self.numerator and self.denominator):
                raise ValueError(
                    "a ratio metric needs `numerator` and `denominator` (names of other metrics)"
                )
            extra = [k for k in ("table", "snippet", "expression", "time_column") if getattr(self, k)]
            if extra or self.filters:
                raise ValueError(
                    f"a ratio metric takes its source from its parts; remove {(extra or ['filters'])[0]!r}"
                )
            return self
        if self.numerator or self.denominator:
            raise ValueError("`numerator`/`denominator` are only for `aggregation: ratio`")
        if bool(self.table) == bool(self.snippet):
            raise ValueError("give exactly one of `table` or `snippet`")
        if not self.expression:
            raise ValueError("missing `expression` (what is aggregated, e.g. a column)")
        if not self.time_column:
            raise ValueError("missing `time_column`")
        return self


class Recipe(FrozenModel):
    """A write or maintenance task: regexes with named groups and an SQL template over those groups.

    `{query}` in the template is special: that group is answered as a read question and its SQL inserted.
    `{table}` and `{column}` groups are resolved against tables.yaml (names and aliases).
    """

    name: str = Field(pattern=IDENTIFIER)
    description: str
    patterns: tuple[str, ...] = Field(min_length=1)
    sql: str


class Preference(FrozenModel):
    """A user preference switched on when `when` (a regex) matches the instructions or the question."""

    name: str = Field(pattern=IDENTIFIER)
    description: str
    when: str
    replace_filters: dict[str, str] = Field(default_factory=dict)
    add_filters: dict[str, str] = Field(default_factory=dict)


class PreferencesFile(FrozenModel):
    preferences: tuple[Preference, ...] = ()


Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class KbProblem:
    path: str
    line: int | None
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class KnowledgeBase:
    """A parsed KB. `spans` maps keys such as `metric:gmv` or `value:region:TH` to `path:first-last`."""

    tables: dict[str, TableDoc] = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)
    dimensions: dict[str, Dimension] = field(default_factory=dict)
    time_grains: dict[str, TimeGrain] = field(default_factory=dict)
    day_filters: dict[str, DayFilter] = field(default_factory=dict)
    snippets: dict[str, str] = field(default_factory=dict)
    recipes: dict[str, Recipe] = field(default_factory=dict)
    preferences: tuple[Preference, ...] = ()
    spans: dict[str, str] = field(default_factory=dict)
    problems: tuple[KbProblem, ...] = ()

    @property
    def errors(self) -> tuple[KbProblem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    def where(self, key: str) -> str | None:
        return self.spans.get(key)
