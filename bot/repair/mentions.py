"""The KB files a failing case is about, for an agent that returns no `used`: those whose names, metric names
or tables the gold SQL and the agent's SQL mention (and the question, for the names).

A file is chosen by, most telling first:
- its own name: the file's stem or a `name:` in it (`kb/metrics/dau.yaml`, `name: dau`) is an identifier of
  the SQL, or a word of the question;
- a table it documents: a key of a `tables:` mapping (`tables: {orders: ...}`) the SQL names; only that
  table's block is shown;
- a table it uses: a `table:` value, or a FROM/JOIN of a `.sql` file, that the SQL names.
A file a chosen one is built from (a metric's `snippet:`) counts as much as that one. Ties go to the file
sharing more identifiers with the SQL, then to the path. Small files are shown whole; in a
larger one, the blocks and lines about the names. Pure: texts in, line ranges out (bot.repair.context numbers
them)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

MAX_MENTIONED = 5  # files shown for one case
WHOLE_LINES = 40  # a chosen file this short is shown whole
OWN, DOCUMENTS, USES = 3, 2, 1  # what each kind of hit weighs
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"^\s*(?:-\s+)?name:\s*[\"']?(?P<name>[A-Za-z_][\w.-]*)")
_TABLE = re.compile(r"^\s*(?:-\s+)?table:\s*[\"']?(?P<name>[A-Za-z_][\w.]*)")
_TABLES = re.compile(r"^(?P<indent>\s*)tables:\s*(?:#.*)?$")
_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][\w]*)\s*:")
_SYNONYMS = re.compile(r"^\s*(?:synonyms|aliases):\s*\[(?P<list>[^\]]*)\]")
_SNIPPET = re.compile(r"^\s*(?:-\s+)?snippet:\s*[\"']?(?P<name>[A-Za-z_][\w.-]*)")
_FROM = re.compile(r"\b(?:from|join)\s+(?P<name>[A-Za-z_][\w.]*)", re.I)


@dataclass(frozen=True)
class Mention:
    file: str
    names: tuple[str, ...]  # what the SQL (or the question) named that chose the file
    marked: tuple[tuple[int, int], ...]  # the lines about those names (1-based, inclusive)
    whole: bool  # show the whole file
    score: int
    refers: tuple[str, ...] = ()  # the KB files it is built from, by name (`snippet: completed_order_items`)


def words(texts: Iterable[str | None]) -> set[str]:
    """The identifiers of `texts`, lower-cased; a qualified `s.orders` gives `s` and `orders`."""
    return {w.lower() for t in texts if t for w in _WORD.findall(t)}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str], i: int, indent: int) -> tuple[int, int]:
    """Line i (0-based) and the lines below it indented deeper than `indent`, as a 1-based range."""
    last = i
    for j in range(i + 1, len(lines)):
        text = lines[j]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if _indent(text) <= indent:
            break
        last = j
    return i + 1, last + 1


def _tables(lines: list[str]) -> dict[str, tuple[int, int]]:
    """{table: its block} of every `tables:` mapping of a YAML file."""
    out: dict[str, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        m = _TABLES.match(line)
        if not m:
            continue
        outer = len(m["indent"])
        first, last = _block(lines, i, outer)
        child = None
        for j in range(first, last):
            k = _KEY.match(lines[j])
            if not k:
                continue
            depth = len(k["indent"])
            child = depth if child is None else child
            if depth == child:
                out.setdefault(k["key"].lower(), _block(lines, j, depth))
    return out


def _lines_naming(lines: list[str], names: set[str]) -> list[tuple[int, int]]:
    return [(n, n) for n, line in enumerate(lines, 1) if names & words([line])]


def _named_blocks(lines: list[str], names: set[str]) -> list[tuple[int, int]]:
    """The block of each `name:` entry (`- name: SEA` and what is indented below it) naming one of `names`."""
    return [
        _block(lines, i, _indent(line))
        for i, line in enumerate(lines)
        if (m := _NAME.match(line)) and m["name"].lower() in names
    ]


def _synonyms(lines: list[str], question: str) -> set[str]:
    """The `synonyms: [...]` / `aliases: [...]` phrases of a YAML file that the question says."""
    found = set()
    for line in lines:
        m = _SYNONYMS.match(line)
        for phrase in m["list"].split(",") if m else ():
            phrase = phrase.strip().strip("'\"").strip()
            if phrase and re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", question, re.I):
                found.add(phrase.lower())
    return found


def mention(path: str, text: str, sql: set[str], question: set[str], asked: str = "") -> Mention | None:
    """How `path` (its text) is about the SQL's identifiers `sql` and the question (its words `question`, its
    text `asked`); None when not. In YAML files `name:`, `table:`, `tables:` and inline `synonyms: [...]`
    count; in `.sql` files their FROM and JOIN tables; in others only the file's name."""
    lines = text.splitlines()
    suffix = PurePosixPath(path).suffix.lower()
    yaml = suffix in (".yaml", ".yml")
    own = {PurePosixPath(path).stem.lower()}
    own |= {m["name"].lower() for line in lines if yaml and (m := _NAME.match(line))}
    uses = {m["name"].lower().rsplit(".", 1)[-1] for line in lines if yaml and (m := _TABLE.match(line))}
    if suffix == ".sql":
        uses |= {m["name"].lower().rsplit(".", 1)[-1] for m in _FROM.finditer(text)}
    tables = _tables(lines) if yaml else {}
    hit_own = (own & (sql | question)) | (_synonyms(lines, asked) if yaml else set())
    hit_tables = set(tables) & sql
    hit_uses = (uses & sql) - hit_tables
    score = OWN * len(hit_own) + DOCUMENTS * len(hit_tables) + USES * len(hit_uses)
    if not score:
        return None
    names = hit_own | hit_tables | hit_uses
    whole = len(lines) <= WHOLE_LINES and bool(hit_own or hit_uses)
    named = _named_blocks(lines, hit_own)
    marked = [tables[t] for t in sorted(hit_tables)] + named + _lines_naming(lines, hit_uses)
    if not named:
        marked += _lines_naming(lines, hit_own)
    marked += [
        (n, n) for n, line in enumerate(lines, 1) if any(" " in h and h in line.lower() for h in hit_own)
    ]
    if not marked and lines:
        marked = [(1, len(lines))]
    refers = tuple(sorted({m["name"].lower() for line in lines if yaml and (m := _SNIPPET.match(line))}))
    return Mention(path, tuple(sorted(names)), tuple(sorted(set(marked))), whole, score, refers)


def _referred(files: Mapping[str, str], found: list[Mention]) -> list[Mention]:
    """The files the chosen ones are built from (a metric's `snippet:`), as telling as the file naming them."""
    chosen = {m.file for m in found}
    stems = {PurePosixPath(p).stem.lower(): p for p in sorted(files, reverse=True)}
    out: dict[str, Mention] = {}
    for m in found:
        for name in m.refers:
            path = stems.get(name)
            if path is None or path in chosen or path in out:
                continue
            lines = files[path].splitlines()
            whole = (1, max(len(lines), 1))
            out[path] = Mention(path, (name,), (whole,), len(lines) <= WHOLE_LINES, m.score)
    return list(out.values())


def find_mentions(
    files: Mapping[str, str],
    sql: Iterable[str | None],
    *,
    question: str = "",
    limit: int = MAX_MENTIONED,
) -> list[Mention]:
    """The `limit` KB files (`files`: {path: text}) most about the SQL texts `sql`, best first."""
    identifiers = words(sql)
    asked = words([question])
    found = [m for p, t in files.items() if (m := mention(p, t, identifiers, asked, question)) is not None]
    found += _referred(files, found)
    shared = {m.file: len(identifiers & words([files[m.file]])) for m in found}
    found.sort(key=lambda m: (-m.score, -shared[m.file], m.file))
    return found[:limit]
