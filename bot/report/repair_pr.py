"""The repair pull request's body (templates/repair_pr.md.j2): at most 65,536 characters, cut cleanly.

    view = build_repair_pr_view(pr_number=12, rates=Rates(base=.92, head=.8, repaired=.92),
                                token="github_token", outcome=outcome, revert=candidate)
    body = render_repair_pr(view)
    data = parse_repair_data(body)  # {"pass_rates": {...}, "cases": {...}, "fixed_by": ...}

The body starts with the hidden marker `<!-- sqlcanary:repair:pr-<n> -->` (how the GitHub adapter finds the pull
request again: bot.github.repair_change.RepairTarget.marker writes the same line) and ends with a hidden JSON
block of its numbers. When too long, the diffs lose whole lines first (GitHub shows them in Files changed), then
the still-failing rows, then whole edits, as the sticky comment loses rows (bot.report.render): every fence and
<details> the template opens is closed, and the marker and the data block are always kept."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from bot.base.secrets import scrub_rendered
from bot.base.templating import tidy_markdown
from bot.report.render import COMMENT_LIMIT, _largest, environment
from bot.report.repair_view import RepairPRView, trim_repair_view

BODY_LIMIT = COMMENT_LIMIT  # characters GitHub accepts in a pull request body
DATA_VERSION = 1
MAX_DATA_IDS = 50  # case ids listed in the data block (their counts are always exact)
MAX_DATA_ID_CHARS = 100
_DATA_OPEN = "<!-- sqlcanary:repair-data"
_DATA = re.compile(re.escape(_DATA_OPEN) + r"\n(?P<json>.*?)\n-->", re.S)


def repair_marker(pr_number: int) -> str:
    """The hidden first line of the repair pull request of source pull request `pr_number`."""
    if not isinstance(pr_number, int) or isinstance(pr_number, bool) or pr_number < 1:
        raise ValueError(f"not a pull request number: {pr_number!r}")
    return f"<!-- sqlcanary:repair:pr-{pr_number} -->"


def _ids(ids: tuple[str, ...]) -> list[str]:
    return [i[:MAX_DATA_ID_CHARS] for i in ids[:MAX_DATA_IDS]]


def repair_data(view: RepairPRView) -> dict[str, Any]:
    """The body's numbers as the data block holds them (JSON types): pass rates as fractions, as outcome.json
    has them; at most MAX_DATA_IDS ids per list, the counts exact."""
    failing = tuple(c.id for c in view.still_failing)
    llm = view.llm
    return {
        "version": DATA_VERSION,
        "pr": view.pr_number,
        "fixed_by": view.fixed_by,
        "token": view.token,
        "pass_rates": {"base": view.base_rate, "head": view.head_rate, "repaired": view.repaired_rate},
        "cases": {
            "fixed": _ids(view.fixed),
            "fixed_count": len(view.fixed),
            "still_failing": _ids(failing),
            "still_failing_count": len(failing) + view.omitted_failing,
        },
        "files": _ids(view.files),
        "edits": len(view.edits) + view.omitted_edits,
        "llm": {
            "calls": llm.calls if llm else 0,
            "cached_calls": llm.cached_calls if llm else 0,
            "prompt_tokens": llm.prompt_tokens if llm else 0,
            "completion_tokens": llm.completion_tokens if llm else 0,
            "cost_usd": llm.cost_usd if llm else 0.0,
        },
        "agent_calls": view.agent_calls,
    }


def data_block(data: dict[str, Any]) -> str:
    """`data` as a hidden HTML comment. Untrusted ids cannot end it: `<`, `>` and `--` only ever occur inside
    JSON strings here, and are written as \\u escapes there."""
    text = json.dumps(data, ensure_ascii=True, sort_keys=True, allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("--", "-\\u002d")
    return f"{_DATA_OPEN}\n{text}\n-->"


def parse_repair_data(body: str) -> dict[str, Any] | None:
    """The data block of a repair pull request's body; None when there is none (or it is not JSON)."""
    m = _DATA.search(body or "")
    if m is None:
        return None
    try:
        data = json.loads(m["json"])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _minimal(view: RepairPRView, *, marker: str, data: str, limit: int) -> str:
    text = (
        f"{marker}\n## sqlcanary repair for #{view.pr_number}\n\nThe repair report is too long to show here: "
        f"see the Files changed tab and the workflow run.\n\n{data}\n"
    )
    head = f"{marker}\n"
    while len(text) > limit and len(text) > len(head):
        body = text[len(head) :]
        text = head + body[: len(body) // 2].rsplit("\n", 1)[0] + "\n"
    return text


def render_repair_pr(view: RepairPRView, *, limit: int = BODY_LIMIT, secrets: Sequence[str] = ()) -> str:
    """The body: at most `limit` characters, the marker first, the data block last (see the module's doc).
    `secrets` are masked in the text (bot.base.secrets.scrub_rendered) before it is measured."""
    marker = repair_marker(view.pr_number)
    data = data_block(repair_data(view))
    template = environment().get_template("repair_pr.md.j2")

    def render(v: RepairPRView) -> str:
        return scrub_rendered(tidy_markdown(template.render(view=v, marker=marker, data=data)), secrets)

    def fits(trimmed: Callable[[int], RepairPRView]) -> Callable[[int], bool]:
        return lambda k: len(render(trimmed(k))) <= limit

    full = render(view)
    if len(full) <= limit:
        return full
    longest = max((e.lines for e in view.edits), default=0)
    steps: list[tuple[int, Callable[[int], RepairPRView]]] = [
        (longest, lambda k: trim_repair_view(view, diff_lines=k)),
        (len(view.still_failing), lambda k: trim_repair_view(view, diff_lines=0, failing=k)),
        (len(view.edits), lambda k: trim_repair_view(view, diff_lines=0, failing=0, edits=k)),
    ]
    for most, trimmed in steps:
        if fits(trimmed)(0):
            return render(trimmed(_largest(0, most, fits(trimmed))))
    return _minimal(view, marker=marker, data=data, limit=limit)
