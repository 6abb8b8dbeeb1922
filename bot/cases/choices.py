"""defog's `{a.x, a.y}` column-choice syntax: each group stands for any non-empty subset of its columns."""

from __future__ import annotations

import itertools

from bot.cases.sqltext import skip_quoted


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _find_groups(sql: str) -> list[tuple[int, int]]:
    """Spans of `{...}` outside quotes and comments."""
    spans, i, n = [], 0, len(sql)
    while i < n:
        ch = sql[i]
        skipped = skip_quoted(sql, i)
        if skipped is not None:
            i = skipped
        elif ch == "{":
            j = sql.find("}", i)
            if j < 0:
                break
            spans.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return spans


def expand_column_choices(sql: str) -> list[str]:
    """All queries a gold with `{}` groups stands for, smallest subsets first; the query itself if none.

    Groups are linked by their text: an empty `{}` (as in `GROUP BY {}`) repeats the choice of the group before
    it, and groups with the same columns take the same choice, as defog's sql-eval expands them.
    """
    spans = _find_groups(sql)
    if not spans:
        return [sql]
    keys: list[tuple[str, ...]] = []
    for start, end in spans:
        cols = tuple(_split_top_level(sql[start + 1 : end - 1]))
        keys.append(cols if cols or not keys else keys[-1])
    unique = list(dict.fromkeys(keys))
    options = [
        [", ".join(c) for r in range(1, len(cols) + 1) for c in itertools.combinations(cols, r)] or [""]
        for cols in unique
    ]
    out = []
    for choice in itertools.product(*options):
        chosen = dict(zip(unique, choice, strict=True))
        pieces, last = [], 0
        for (start, end), key in zip(spans, keys, strict=True):
            pieces.append(sql[last:start])
            pieces.append(chosen[key])
            last = end
        pieces.append(sql[last:])
        out.append("".join(pieces))
    return out
