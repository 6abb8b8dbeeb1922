"""The case and suite models: what a benchmark is made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from bot.base.fixture_files import FixtureFile, read_fixtures
from bot.base.results import FrozenModel
from bot.config.model import MAX_PERTURB
from bot.config.presets import check_preset

Category = Literal["query", "personalization", "management", "efficiency"]
CATEGORIES: tuple[str, ...] = ("query", "personalization", "management", "efficiency")
READ_ONLY_CATEGORIES = frozenset({"query", "personalization"})


class CompareOptions(FrozenModel):
    """How result sets are compared. Unset fields come from the preset (default `sqlcanary`).

    Where an option is declared for users: its name, its values and their checks. A table comparison option is
    also a field of bot.scoring.table_options.TableOptions, with its default there; it is carried over by name."""

    preset: str | None = None
    rows: Literal["multiset", "set"] | None = None
    columns: Literal["positional", "permute", "subset"] | None = None
    order: Literal["auto", "ignore", "strict"] | None = None
    abs_tol: float | None = Field(default=None, ge=0)
    rel_tol: float | None = Field(default=None, ge=0)
    bool_is_int: bool | None = None
    empty_gold_fails: bool | None = None
    datetime_as_date: bool | None = None
    strip_distinct: bool | None = None

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        return check_preset(value)

    def merged_over(self, base: CompareOptions) -> CompareOptions:
        """These options, with unset fields taken from `base`."""
        data = base.model_dump(exclude_none=True)
        data.update(self.model_dump(exclude_none=True))
        return CompareOptions(**data)


class Check(FrozenModel):
    """A query run after a write.

    `expect: true` (default): it must return one true value; a list: exactly those rows (as a multiset);
    `gold`: the same rows as the check returns after the gold ran.
    """

    sql: str
    expect: bool | Literal["gold"] | list[list[Any]] = True
    name: str = ""


class Efficiency(FrozenModel):
    """For efficiency cases: the prediction's plan cost must be at most (1 - threshold) x the reference's.

    `reference_sql` is the slow query being rewritten (default: the gold). `explain_sql` is the query whose
    plan is measured after the prediction ran (for predictions that add an index rather than rewrite a query).
    """

    reference_sql: str | None = None
    explain_sql: str | None = None
    threshold: float = Field(default=0.0, ge=0, lt=1)


class Case(FrozenModel):
    id: str
    question: str
    gold_sql: tuple[str, ...] = ()
    db: str
    tags: tuple[str, ...] = ()
    category: Category = "query"
    instructions: str = ""
    setup_sql: tuple[str, ...] = ()
    teardown_sql: tuple[str, ...] = ()  # never run: every case is rolled back (README, case keys)
    checks: tuple[Check, ...] = ()
    compare: CompareOptions = CompareOptions()
    efficiency: Efficiency | None = None
    source: str = ""
    # `perturb: K` on the case (wins over `--perturb`) and `defaults: {perturb: K}` (loses to it): the number of
    # perturbed copies of the database the case must also agree on (bot/run/perturbed.py). None: not set.
    perturb: int | None = Field(default=None, ge=0, le=MAX_PERTURB)
    perturb_default: int | None = Field(default=None, ge=0, le=MAX_PERTURB)

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @property
    def read_only(self) -> bool:
        return self.category in READ_ONLY_CATEGORIES or (
            self.category == "efficiency"
            and self.efficiency is not None
            and self.efficiency.explain_sql is None
        )

    def perturb_copies(self, run_level: int | None) -> int:
        """How many perturbed copies this case runs on: its own `perturb`, else the run's `--perturb`, else the
        defaults'. Only query cases are perturbed (writes and efficiency cases are out of scope)."""
        if self.category not in READ_ONLY_CATEGORIES:
            return 0
        for k in (self.perturb, run_level, self.perturb_default):
            if k is not None:
                return k
        return 0

    def agent_payload(self) -> dict[str, Any]:
        """What an agent is told about the case: never the gold."""
        return {
            "id": self.id,
            "question": self.question,
            "db": self.db,
            "category": self.category,
            "tags": list(self.tags),
            "instructions": self.instructions,
        }


class SuiteSettings(FrozenModel):
    statement_timeout_ms: int = Field(default=30_000, gt=0)
    row_cap: int = Field(default=10_000, gt=0)
    compare: CompareOptions = CompareOptions()


@dataclass(frozen=True)
class Suite:
    name: str
    root: Path
    databases: dict[str, tuple[Path, ...]]
    settings: SuiteSettings
    cases: tuple[Case, ...]
    content_hash: str
    files: tuple[Path, ...] = field(default_factory=tuple)
    location: Path = Path(".")  # what load_suite was given: the folder or the single file
    # The SHA-256 of each fixture file (by path) as the loader read it: what a run loads (bot.cases.fixture_files)
    fixture_digests: dict[str, str] = field(default_factory=dict)

    def fixtures(self, db: str) -> tuple[FixtureFile, ...]:
        """The fixtures of database `db`, each the bytes the loader read, or refused (exit 2)."""
        return read_fixtures(self.databases[db], self.fixture_digests)

    def case(self, case_id: str) -> Case:
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(case_id)
