"""defog's `{a.x, a.y}` column-choice syntax: each group stands for any non-empty subset of its columns."""

from __future__ import annotations

import itertools
import re


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
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
        dollar = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", sql[i:]) if ch == "$" else None
        if dollar and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            end = sql.find(dollar.group(0), i + len(dollar.group(0)))
            i = n if end < 0 else end + len(dollar.group(0))
        elif ch in ("e", "E") and sql.startswith("'", i + 1) and (i == 0 or not sql[i - 1].isalnum()):
            j = i + 2
            while j < n and sql[j] != "'":
                j += 2 if sql[j] == "\\" else 1
            i = j + 1
        elif ch in ("'", '"'):
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
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
