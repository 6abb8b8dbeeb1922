"""Agents that need no process: `gold` (a suite self-test), `predictions:PATH` and `run:RUN.json`."""

from __future__ import annotations

import json
from pathlib import Path

from bot.agents.base import Answer
from bot.base.errors import AgentError
from bot.base.results import read_run
from bot.cases.model import Case


class GoldAgent:
    """Answers with a gold alternative: `gold` (the first), `gold:last`, or `gold:all` (each must pass)."""

    def __init__(self, which: str = "first") -> None:
        if which not in ("first", "last", "all"):
            raise AgentError(f"gold agent: unknown choice {which!r} (use gold, gold:last or gold:all)")
        self.which = which
        self.name = "gold" if which == "first" else f"gold:{which}"

    def answer(self, case: Case) -> Answer:
        if not case.gold_sql:
            return Answer(error="the case has no gold SQL", error_class="agent_declined")
        if self.which == "all":
            return Answer(sql=case.gold_sql[0], alternatives=case.gold_sql)
        return Answer(sql=case.gold_sql[0 if self.which == "first" else -1])

    def close(self) -> None:
        pass


def _load_predictions(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentError(f"cannot read predictions: {exc.strerror}", path=str(path)) from exc
    out: dict[str, str] = {}
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and path.suffix == ".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AgentError(f"not valid JSON: {exc.msg}", path=str(path), line=exc.lineno) from exc
        items = data if isinstance(data, list) else [{"id": k, "sql": v} for k, v in data.items()]
        for i, item in enumerate(items):
            _add(out, item, path=path, line=None, where=f"item {i}")
        return out
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AgentError(f"not valid JSON: {exc.msg}", path=str(path), line=lineno) from exc
        _add(out, item, path=path, line=lineno, where=f"line {lineno}")
    return out


def _add(out: dict[str, str], item: object, *, path: Path, line: int | None, where: str) -> None:
    if (
        not isinstance(item, dict)
        or "id" not in item
        or "sql" not in item
        or not isinstance(item["sql"], str | None)
    ):
        raise AgentError(f"{where}: expected an object with `id` and `sql`", path=str(path), line=line)
    key = str(item["id"])
    if key in out:
        raise AgentError(f"{where}: a second prediction for case {key!r}", path=str(path), line=line)
    out[key] = item.get("sql") or ""


class PredictionsAgent:
    """Answers from a file of `{"id", "sql"}` (JSON or JSONL), the BIRD/Spider way; or from a saved run."""

    def __init__(self, predictions: dict[str, str], *, name: str) -> None:
        self.predictions = predictions
        self.name = name

    @classmethod
    def from_file(cls, path: Path) -> PredictionsAgent:
        return cls(_load_predictions(path), name=f"predictions:{path.name}")

    @classmethod
    def from_run(cls, path: Path) -> PredictionsAgent:
        run = read_run(path)
        preds = {c.id: c.prediction.sql for c in run.cases if c.prediction.sql}
        return cls(preds, name=f"run:{path.name}")

    def answer(self, case: Case) -> Answer:
        sql = self.predictions.get(case.id)
        if sql is None:
            return Answer(error="no prediction for this case", error_class="agent_missing")
        if not sql.strip():
            return Answer(error="the prediction is empty", error_class="agent_empty")
        return Answer(sql=sql)

    def close(self) -> None:
        pass
