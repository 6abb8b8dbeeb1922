"""The shop reference agent: answers questions from the knowledge base in ./kb, no LLM involved.

A model of the sqlcanary agent protocol:

- as a Python agent (`agent: python:agent.py:answer`): `answer(request) -> dict` is called once per case;
- as a command agent: `python agent.py` reads one JSON request on stdin and prints one JSON answer;
  `python agent.py --jsonl` answers one request per stdin line, one answer per stdout line, until EOF.

A request is `{"id", "question", "db", "category", "tags", "instructions", "options"}`; the answer is
`{"sql": ..., "used": ["kb/metrics/gmv.yaml:1-14", ...]}` (the KB lines the SQL came from) or `{"error": ...}`.
The KB folder is `options.kb`, else $SHOP_KB_DIR, else the `kb` folder next to this file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _import_path() -> None:
    """Make `bot.kb` and the `shopagent` helpers importable when run as a plain script from anywhere."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    try:
        import bot.kb  # noqa: F401
    except ImportError:
        for folder in (Path.cwd(), *HERE.parents):
            if (folder / "bot" / "kb" / "__init__.py").is_file():
                sys.path.insert(0, str(folder))
                break


_import_path()

from shopagent.compose import CannotAnswer, Context, compose  # noqa: E402
from shopagent.question import parse_question  # noqa: E402
from shopagent.tasks import apply_preferences, fill_recipe, find_recipe  # noqa: E402

from bot.kb import KnowledgeBase, load_kb  # noqa: E402

_CACHE: dict[tuple[str, tuple[tuple[str, int, int], ...]], KnowledgeBase] = {}


def kb_folder(request: dict[str, Any]) -> Path:
    option = (request.get("options") or {}).get("kb")
    return Path(option or os.environ.get("SHOP_KB_DIR") or HERE / "kb").resolve()


def knowledge_base(folder: Path) -> KnowledgeBase:
    """The KB in `folder`, re-read whenever a file in it changes."""
    stamp = tuple(
        (str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.rglob("*")) if p.is_file()
    )
    key = (str(folder), stamp)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load_kb(folder, prefix="kb")
    return _CACHE[key]


def answer_read(ctx: Context, question: str, instructions: str) -> str:
    plan = parse_question(question, ctx.kb, instructions=instructions)
    for key in plan.used:
        ctx.use(key)
    return compose(ctx, plan)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Answer one request; never raises."""
    try:
        kb = knowledge_base(kb_folder(request))
        question = str(request.get("question") or "")
        instructions = str(request.get("instructions") or "")
        ctx = Context(kb)
        apply_preferences(ctx, f"{instructions}\n{question}")
        found = find_recipe(kb, question)
        if found:
            sql = fill_recipe(ctx, *found, lambda q: answer_read(ctx, q, instructions))
        else:
            sql = answer_read(ctx, question, instructions)
        used = [kb.where(key) for key in ctx.used]
        return {"sql": sql, "used": [u for u in used if u]}
    except CannotAnswer as exc:
        return {"error": f"cannot answer: {exc}"}
    except Exception as exc:  # noqa: BLE001 - an agent reports failures as answers
        return {"error": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str]) -> int:
    if "--jsonl" in argv:
        for line in sys.stdin:
            if line.strip():
                print(json.dumps(answer(json.loads(line))), flush=True)
        return 0
    print(json.dumps(answer(json.load(sys.stdin))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
