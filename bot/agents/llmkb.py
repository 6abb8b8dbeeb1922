"""The KB files the `llm` agent puts in its prompt, and which of them to drop first when the prompt is longer
than the model's context: the files least related to the case, by the question's words weighted by how rare
each word is across the KB (a word every file has says nothing about which file the case needs).

The order of the files in the prompt never depends on the case (sorted by path): a local server caches the
prompt's shared prefix (schema and KB), so every case after the first is read in seconds, not minutes."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.config.model import Config

MAX_KB_CHARS = 200_000  # all KB files together; the rest is left out (and not listed in `used`)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "per",
        "the",
        "to",
        "was",
        "were",
        "what",
        "which",
        "with",
    )
)


@dataclass(frozen=True)
class KbFile:
    path: str  # relative to the config's folder, posix ("kb/metrics/dau.yaml")
    text: str


def read_kb_files(config: Config, *, limit: int = MAX_KB_CHARS) -> list[KbFile]:
    """Files matched by `kb.paths` under the config's folder (symlinks out of it are skipped), sorted."""
    base = Path(config.base_dir).resolve()
    found: dict[str, Path] = {}
    for pattern in config.kb.paths:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            continue
        for p in base.glob(pattern):
            real = p.resolve()
            if p.is_file() and real.is_relative_to(base):
                found[p.relative_to(base).as_posix()] = real
    out: list[KbFile] = []
    total = 0
    for rel in sorted(found):
        try:
            text = found[rel].read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if total + len(text) > limit:
            break
        total += len(text)
        out.append(KbFile(rel, text))
    return out


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def relevance(question: str, files: Sequence[KbFile]) -> dict[str, float]:
    """{path: score}: the question's words each file contains, each weighted by log(N / files having it); a
    word of the file's name counts twice (`cpc.yaml` for "CPC by region")."""
    asked = words(question)
    bags = {f.path: words(f.text) for f in files}
    names = {f.path: words(Path(f.path).stem.replace("_", " ")) for f in files}
    n = len(files) or 1
    df = {w: sum(w in bag or w in names[p] for p, bag in bags.items()) for w in asked}
    idf = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items() if c}
    return {
        p: sum(weight * ((w in bags[p]) + 2 * (w in names[p])) for w, weight in idf.items()) for p in bags
    }


def fit(files: Sequence[KbFile], question: str, *, max_chars: int) -> list[KbFile]:
    """The most related files whose texts add up to at most `max_chars`, in their original order."""
    score = relevance(question, files)
    ranked = sorted(files, key=lambda f: (-score[f.path], len(f.text), f.path))
    keep: set[str] = set()
    total = 0
    for f in ranked:
        if total + len(f.text) <= max_chars:
            keep.add(f.path)
            total += len(f.text)
    return [f for f in files if f.path in keep]


def kb_chars(files: Sequence[KbFile]) -> int:
    return sum(len(f.text) for f in files)
