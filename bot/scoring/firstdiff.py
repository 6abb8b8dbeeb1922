"""The first difference a person would point at, for a comparison that already failed.

Rows are aligned by the columns that agree (the gold's GROUP BY or ORDER BY key when it pairs rows, else the
column set pairing the most rows one to one, see alignment.py; the pairing itself is row_pairing.py), then the
smallest true difference is reported: a changed value in an aligned row, else a missing row, else an extra row,
with how many rows differ (changed, missing and extra rows counted apart when some are missing or extra).
Pairing rows in sort order instead named two different months for one wrong value, and the repair loop, which
reads the same text, chased that.

Only the message depends on this: the verdict is decided before. The cost is bounded: at most `limit` rows of
each side are read, by slicing, so a caller's sequence sees exactly which rows were looked at. Beyond that
window a row is never called missing or extra (it may sit further down), and no count is claimed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.scoring.alignment import Row, choose_key, choose_mapping, key_of
from bot.scoring.row_pairing import Pairing, distinct_rows, pair_by_key, unmatched_rows
from bot.scoring.values import show

MAX_ROWS = 10_000  # rows of each side examined (the default row cap)
SHOWN_COLUMNS = 2  # differing columns named in the message (details hold them all)
SHOWN_VALUES = 3  # values shown for a missing or extra row
SHOWN_KEY_COLUMNS = 4
KEY_VALUE_WIDTH = 80  # a key value names the row: whole up to here, then cut with an ellipsis

Kind = Literal["changed", "missing", "extra"]
Cells = tuple[tuple[int, str, str], ...]  # (gold column position, column name, shown value)


def row_counts(gold: int, pred: int) -> str:
    return f"row count differs: gold has {gold} row{'' if gold == 1 else 's'}, prediction has {pred}"


def _rows(n: int) -> str:
    return "row" if n == 1 else "rows"


@dataclass(frozen=True)
class FirstDifference:
    kind: Kind
    key: Cells  # the values naming the row; every column when no key aligned it
    changes: tuple[tuple[int, str, str, str], ...] = ()  # changed: (position, column, gold, prediction)
    values: Cells = ()  # missing / extra: the row's other values
    differing: int | None = None  # None: not every row was examined
    total: int | None = None
    missing: int = 0  # of `differing`: gold rows without a partner, prediction rows without one
    extra: int = 0
    gold_rows: int = 0
    pred_rows: int = 0
    limit: int = MAX_ROWS
    repeated: frozenset[str] = frozenset()  # column names the gold repeats (named with their position)
    copies: tuple[int, int] = (0, 0)  # a whole row on both sides, more on one: (gold, prediction) counts
    reorder: tuple[str, ...] = ()  # positional columns: the prediction's columns that would line up instead
    mapping_score: int = field(default=1, compare=False)  # values the column mapping lines up (0: none)
    mapping: tuple[int, ...] = field(default=(), compare=False)  # the prediction's column for each gold one

    def _name(self, pos: int, name: str, *, quote: bool = False) -> str:
        shown = f"`{name}`" if quote else name
        return f"{shown} (column {pos + 1})" if name in self.repeated else shown

    def message(self) -> str:
        text = self._message()
        if self.reorder:
            text += (
                f"; the prediction's columns line up with the gold's in this order: {', '.join(self.reorder)}"
            )
        return text

    def _message(self) -> str:
        prefix = f"{row_counts(self.gold_rows, self.pred_rows)}; " if self.gold_rows != self.pred_rows else ""
        if self.differing is None or self.total is None:
            return f"{prefix}{self._detail()} (in the first {self.limit:,} rows of each side)"
        if self.missing or self.extra:
            return f"{prefix}{self._apart()}; {self._detail()}"
        verb = "differs" if self.differing == 1 else "differ"
        rows = f"row{'' if self.total == 1 else 's'}"
        return f"{prefix}{self.differing} of {self.total} {rows} {verb}; {self._detail()}"

    def _apart(self) -> str:
        """Changed, missing and extra rows counted apart: "1 row changed, 2 missing, 1 extra (of 4 gold rows)"."""
        changed = (self.differing or 0) - self.missing - self.extra
        counts = [
            (n, w) for n, w in ((changed, "changed"), (self.missing, "missing"), (self.extra, "extra")) if n
        ]
        parts = [f"{n} {w}" for n, w in counts]
        parts[0] = f"{counts[0][0]} {_rows(counts[0][0])} {counts[0][1]}"
        return f"{', '.join(parts)} (of {self.gold_rows} gold {_rows(self.gold_rows)})"

    def _detail(self) -> str:
        key = ", ".join(f"{self._name(i, c)}={v}" for i, c, v in self.key[:SHOWN_KEY_COLUMNS])
        key += ", …" if len(self.key) > SHOWN_KEY_COLUMNS else ""
        if self.kind == "changed":
            where = f" for ({key})" if key else ""
            parts = [
                f"{self._name(i, c, quote=True)}{where if n == 0 else ''}: gold {g}, prediction {p}"
                for n, (i, c, g, p) in enumerate(self.changes[:SHOWN_COLUMNS])
            ]
            more = len(self.changes) - SHOWN_COLUMNS
            return "; ".join(parts) + (
                f"; and {more} more column{'' if more == 1 else 's'}" if more > 0 else ""
            )
        values = ", ".join(f"{self._name(i, c, quote=True)} {v}" for i, c, v in self.values[:SHOWN_VALUES])
        values += ", …" if len(self.values) > SHOWN_VALUES else ""
        if min(self.copies) > 0:
            return f"row ({key}) is {self.copies[0]} times in the gold, {self.copies[1]} in the prediction"
        if self.kind == "missing":
            return f"row ({key}) is missing from the prediction" + (f" (gold: {values})" if values else "")
        return f"row ({key}) is not in the gold" + (f" (prediction: {values})" if values else "")

    def details(self) -> dict[str, Any]:
        """JSON-ready, for reports and the repair loop: values as the message shows them, columns by name (with
        their position when the gold repeats a name) and by gold position."""
        first = self.changes[0] if self.changes else None
        return {
            "kind": self.kind,
            "key": {self._name(i, c): v for i, c, v in self.key},
            "key_positions": [i for i, _, _ in self.key],
            "column": self._name(first[0], first[1]) if first else None,
            "position": first[0] if first else None,
            "gold": first[2] if first else None,
            "prediction": first[3] if first else None,
            "columns": [
                {"position": i, "column": self._name(i, c), "gold": g, "prediction": p}
                for i, c, g, p in self.changes
            ],
            "row": {self._name(i, c): v for i, c, v in self.values},
            "differing": self.differing,
            "total": self.total,
            **({"missing": self.missing, "extra": self.extra} if self.missing or self.extra else {}),
            **({"copies": list(self.copies)} if min(self.copies) > 0 else {}),
        }


def first_difference(
    gold: Sequence[Row],
    pred: Sequence[Row],
    *,
    columns: tuple[str, ...],
    pred_columns: tuple[str, ...],
    mappings: Sequence[tuple[int, ...]] = (),
    keys: Sequence[tuple[int, ...]] = (),
    abs_tol: float,
    rel_tol: float,
    distinct: bool = False,
    positional: bool = False,
    limit: int = MAX_ROWS,
) -> FirstDifference | None:
    """The smallest true difference between normalised gold rows and prediction rows (in the prediction's own
    column order; `mappings` are the column mappings the comparison tried, `keys` candidate row keys from the
    gold's SQL as gold positions). None when the examined rows show none.

    `distinct`: set semantics, duplicates are dropped once the prediction's columns are lined up. `positional`:
    columns compare by position only, so position is kept even when another mapping lines up more values."""
    complete = len(gold) <= limit and len(pred) <= limit
    g = list(gold[:limit])
    p_raw = list(pred[:limit])
    mapping, score = choose_mapping(g, p_raw, (columns, pred_columns), mappings)
    reorder: tuple[str, ...] = ()
    if positional:
        kept = tuple(mappings[0]) if mappings else tuple(range(len(columns)))
        if mapping != kept and score > 0:  # say so: the values are there, in other columns
            reorder = tuple(pred_columns[j] for j in mapping)
        mapping, score = kept, 1
    p = [tuple(r[j] for j in mapping) for r in p_raw]
    if distinct:
        g, p = distinct_rows(g), distinct_rows(p)
    rg, rp = unmatched_rows(g, p, (abs_tol, rel_tol))
    key = choose_key(
        g,
        [r for _, r in rg],
        [r for _, r in rp],
        width=len(columns),
        hints=keys,
        infer=not len(g) == len(p) == 1,
    )
    found = pair_by_key(rg, rp, key, width=len(columns), tol=(abs_tol, rel_tol))
    repeated = frozenset(c for c, n in Counter(columns).items() if n > 1)
    counts: dict[str, Any] = {
        "gold_rows": len(g),
        "pred_rows": len(p),
        "limit": limit,
        "mapping_score": score,
        "repeated": repeated,
        "reorder": reorder,
        "mapping": tuple(mapping),
    }
    if complete:
        counts["differing"] = len(found.changed) + len(found.missing) + len(found.extra)
        counts["missing"], counts["extra"] = len(found.missing), len(found.extra)
        counts["total"] = len(g) - len(rg) + found.pairs + len(found.missing) + len(found.extra)
    else:
        counts["gold_rows"], counts["pred_rows"] = len(gold), len(pred)

    # A row is surely missing (extra) only when the other side was read to its end.
    read = (len(pred) <= limit, len(gold) <= limit)
    return _first(found, key, columns, (g, p), read, counts)


def _first(
    found: Pairing,
    key: tuple[int, ...],
    columns: tuple[str, ...],
    sides_rows: tuple[list[Row], list[Row]],
    read: tuple[bool, bool],
    counts: dict[str, Any],
) -> FirstDifference | None:
    """The first changed row, else the first missing or extra one (`read`: whether the prediction's and the
    gold's rows were read to their end), with `counts`."""
    g, p = sides_rows

    def named(row: Row, cols: Sequence[int]) -> Cells:
        return tuple((i, columns[i], show(row[i], KEY_VALUE_WIDTH)) for i in cols)

    if found.changed:
        _, _, grow, prow, diff = min(found.changed, key=lambda t: (t[0], t[1]))
        changes = tuple((i, columns[i], show(grow[i]), show(prow[i])) for i in diff)
        return FirstDifference("changed", named(grow, key), changes, **counts)
    sides: tuple[tuple[Kind, list[tuple[int, Row]], list[Row], bool], ...] = (
        ("missing", found.missing, p, read[0]),
        ("extra", found.extra, g, read[1]),
    )
    for kind, rows, other, other_read in sides:
        if rows and other_read:
            row = min(rows)[1]  # the first by position
            named_key = key_of(row, key)
            if not key or any(key_of(r, key) == named_key for r in other):  # the key would not single it out
                copies = (sum(1 for r in g if r == row), sum(1 for r in p if r == row))
                return FirstDifference(kind, named(row, range(len(columns))), copies=copies, **counts)
            values = tuple((i, columns[i], show(row[i])) for i in range(len(columns)) if i not in key)
            return FirstDifference(kind, named(row, key), values=values, **counts)
    return None
