"""The first rows of each side of a failed case as small aligned text tables, for `sqlcanary show`: what the run
recorded in the execution verdict's details (bot.scoring.samples), or a line saying it recorded none."""

from __future__ import annotations

from typing import Any

from bot.base.results import CaseResult
from bot.base.textfilters import one_line
from bot.scoring.samples import KEY, SAMPLE_ROWS

NOT_RECORDED = (
    "rows: not recorded in this run (a run records the first rows of both sides of a failed row comparison; "
    "runs of older sqlcanary versions record none)"
)


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n} rows"


def _table(side: dict[str, Any]) -> list[str]:
    """The columns (with their types) over the rows, each column as wide as its widest cell."""
    header = [one_line(f"{c} ({t})") for c, t in zip(side["columns"], side["types"], strict=False)]
    body = [[one_line(v) for v in row] for row in side["rows"]]
    widths = [max(len(x) for x in col) for col in zip(header, *body, strict=False)]

    def line(cells: list[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    return [line(header), "-+-".join("-" * w for w in widths), *(line(r) for r in body)]


def _side(name: str, side: dict[str, Any]) -> list[str]:
    total = int(side.get("total", 0))
    count = f"more than {_rows(total)} (cut at the row cap)" if side.get("truncated") else _rows(total)
    more_columns = int(side.get("more_columns", 0))
    extra = (
        f", {more_columns} more column{'' if more_columns == 1 else 's'} not recorded" if more_columns else ""
    )
    lines = [f"  {name}, {count}{extra}:"]
    if not side.get("columns"):
        return [*lines, "    (no columns)"]
    lines += [f"    {t}" for t in _table(side)]
    left = total - len(side["rows"])
    if left > 0:
        lines.append(f"    … {left} more row{'' if left == 1 else 's'}")
    return lines


def samples_text(case: CaseResult) -> str:
    """The recorded first rows of the gold and the prediction, or NOT_RECORDED; one block of lines."""
    execution = case.verdicts.get("execution")
    recorded = execution.details.get(KEY) if execution is not None else None
    if not isinstance(recorded, dict) or not {"gold", "prediction"} <= recorded.keys():
        return NOT_RECORDED + "\n"
    try:
        lines = [f"rows (the first {SAMPLE_ROWS} of each side):"]
        lines += _side("gold", recorded["gold"]) + _side("prediction", recorded["prediction"])
    except (KeyError, TypeError, ValueError):  # written by another version: say so rather than guess
        return NOT_RECORDED + "\n"
    return "\n".join(lines) + "\n"
