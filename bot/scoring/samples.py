"""The first rows of each side of a failed comparison, recorded in the execution verdict's details so that
`sqlcanary show` can print them after the run: bounded (SAMPLE_ROWS rows, SAMPLE_COLUMNS columns, each value cut
at SAMPLE_WIDTH characters) so that a run file stays small. Values are text, as a terminal shows them; they are
in the run file, masked where it is masked (bot.base.secrets.redact_model walks every string of a verdict)."""

from __future__ import annotations

from typing import Any

from bot.base.results import ResultSet, Verdict
from bot.scoring.type_notes import type_name

SAMPLE_ROWS = 5
SAMPLE_COLUMNS = 12
SAMPLE_WIDTH = 40
KEY = "samples"  # details["samples"] = {"gold": side, "prediction": side}
_BLANKS = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def cell(v: Any, width: int = SAMPLE_WIDTH) -> str:
    """One value on one line: NULL, text as it is, anything else as str() gives it; cut with "…"."""
    text = "NULL" if v is None else str(v).translate(_BLANKS)
    return text if len(text) <= width else text[: width - 1] + "…"


def sample(result: ResultSet) -> dict[str, Any]:
    """The first rows of one side: its columns (with their types), the rows as text, how many rows it has."""
    shown = range(min(len(result.columns), SAMPLE_COLUMNS))
    return {
        "columns": [cell(result.columns[i]) for i in shown],
        "types": [type_name(result.type_oids[i]) for i in shown],
        "more_columns": len(result.columns) - len(shown),
        "rows": [[cell(row[i]) for i in shown] for row in result.rows[:SAMPLE_ROWS]],
        "total": len(result.rows),
        "truncated": result.truncated,
    }


def with_samples(verdict: Verdict, gold: ResultSet, pred: ResultSet) -> Verdict:
    """`verdict` with the first rows of both sides in its details (for a verdict that did not match)."""
    if verdict.match is not False:
        return verdict
    details = {**verdict.details, KEY: {"gold": sample(gold), "prediction": sample(pred)}}
    return verdict.model_copy(update={"details": details})
