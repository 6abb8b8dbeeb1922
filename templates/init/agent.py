#!/usr/bin/env python3
"""An example `command:` agent for sqlcanary, written by `sqlcanary init`: replace it with yours.

sqlcanary starts it once per case, writes one JSON request on its stdin:
    {"id": "...", "question": "...", "db": "shop", "category": "query", "tags": [...], "instructions": "...",
     "options": {...}, "attempt": 1}
and reads one JSON answer from its stdout:
    {"sql": "SELECT ...", "used": ["kb/queries/revenue_2025.sql:1-4"]}
`used` (optional) names the knowledge-base lines the answer drew on, as `path:first-last` relative to this
folder: a pull request's report then links each regression to the changed KB lines it used, and
`sqlcanary repair` shows the model exactly those lines. {"error": "..."} declines a case (it counts as errored).

This one has no model: it answers with the KB query whose `-- question:` line shares the most words with the
question. Standard library only.
"""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KB = HERE / "kb" / "queries"


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def best_query(question):
    """(score, path, sql) of the KB query that shares the most words with the question."""
    best = (0, None, "")
    for path in sorted(KB.glob("*.sql")):
        lines = path.read_text(encoding="utf-8").splitlines()
        described = " ".join(line[len("-- question:") :] for line in lines if line.startswith("-- question:"))
        score = len(words(question) & words(described))
        if score > best[0]:
            sql = "\n".join(line for line in lines if not line.startswith("--")).strip()
            best = (score, path, sql)
    return best


def answer(request):
    score, path, sql = best_query(request.get("question", ""))
    if path is None:
        return {"error": "no query in kb/queries/ matches this question"}
    lines = len(path.read_text(encoding="utf-8").splitlines())
    return {"sql": sql, "used": [f"{path.relative_to(HERE).as_posix()}:1-{lines}"]}


if __name__ == "__main__":
    print(json.dumps(answer(json.load(sys.stdin))))
