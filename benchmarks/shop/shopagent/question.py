"""Turn a question into a Plan using only the names the KB defines: metric synonyms, dimension values and
groups, breakdown words, time grains and day filters. Matched words are blanked out so that "daily active
users" is not also read as a daily breakdown."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.kb import KnowledgeBase

from .periods import Period, parse_time

NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "ten": 10,
}
TOP = re.compile(
    r"\b(?P<dir>top|bottom|lowest|highest|best|worst) (?P<n>\d+|" + "|".join(NUMBER_WORDS) + r") ", re.I
)
WHICH = re.compile(
    r"\bwhich (?P<what>[a-z ]+?) (?:had|has|have|saw|got|with) the (?P<dir>highest|most|largest|biggest|lowest|least|smallest|fewest)\b",
    re.I,
)
RANKED = re.compile(r"\b(?:ranked|sorted|ordered) by\b", re.I)
BREAKDOWN = re.compile(
    r"\b(?:by|per|for each|for every|across|split by|broken down by|each)\s+(?P<list>[a-z ,]+)", re.I
)
ASCENDING = {"bottom", "lowest", "worst", "least", "smallest", "fewest"}


@dataclass
class Plan:
    metrics: list[str] = field(default_factory=list)
    filters: dict[str, list[str]] = field(default_factory=dict)  # dimension -> values
    day_filter: str | None = None
    period: Period | None = None
    compare_to: Period | None = None
    breakdown: list[str] = field(default_factory=list)  # dimension or time-grain names
    order_desc: bool | None = None  # set for rankings
    limit: int | None = None
    used: list[str] = field(default_factory=list)  # KB span keys


def phrase_rx(phrase: str, *, exact_case: bool = False) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in phrase.split())
    return re.compile(rf"(?<![\w-]){body}(?:e?s)?(?![\w-])", 0 if exact_case else re.I)


def blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def find_names(text: str, names: list[tuple[str, str, bool]]) -> tuple[list[tuple[int, str]], str]:
    """Occurrences of (phrase, key, exact_case) entries, longest phrase first; returns (position, key) hits."""
    hits = []
    for phrase, key, exact in sorted(names, key=lambda n: -len(n[0])):
        for m in phrase_rx(phrase, exact_case=exact).finditer(text):
            if text[m.start() : m.end()].strip():
                hits.append((m.start(), key))
                text = blank(text, m.start(), m.end())
    return sorted(hits), text


def metric_names(kb: KnowledgeBase) -> list[tuple[str, str, bool]]:
    out = []
    for name, metric in kb.metrics.items():
        out += [(s, name, False) for s in (*metric.synonyms, name.replace("_", " "))]
    return out


def value_names(kb: KnowledgeBase) -> list[tuple[str, str, bool]]:
    out = []
    for dim in kb.dimensions.values():
        for v in dim.values:
            # codes (ID, TH) only in capitals; plain words (electronics) in any case
            out.append((v.value, f"value:{dim.name}:{v.value}", v.value.isupper()))
            out += [(a, f"value:{dim.name}:{v.value}", False) for a in v.aliases]
        for g in dim.groups:
            out += [(a, f"group:{dim.name}:{g.name}", a.isupper()) for a in (g.name, *g.aliases)]
    return out


def breakdown_names(kb: KnowledgeBase) -> dict[str, str]:
    """Words naming a breakdown -> dimension or grain name ("market" -> region, "monthly" -> month)."""
    out: dict[str, str] = {}
    for dim in kb.dimensions.values():
        for word in (dim.name, *dim.synonyms):
            out[word.lower()] = dim.name
    for grain in kb.time_grains.values():
        for word in (grain.name, *grain.synonyms):
            out[word.lower()] = grain.name
    return out


def resolve_values(kb: KnowledgeBase, keys: list[str], plan: Plan) -> None:
    for key in keys:
        kind, dim, name = key.split(":", 2)
        values = [name]
        if kind == "group":
            values = list(next(g for g in kb.dimensions[dim].groups if g.name == name).members)
        bucket = plan.filters.setdefault(dim, [])
        bucket += [v for v in values if v not in bucket]
        if key not in plan.used:
            plan.used.append(key)


def _singular(word: str) -> str:
    word = word.strip().lower()
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            return stem
    return word


def lookup_breakdown(words: str, names: dict[str, str]) -> str | None:
    words = " ".join(words.lower().split())
    return names.get(words) or names.get(_singular(words)) or names.get(words.rstrip("s"))


def parse_breakdowns(text: str, kb: KnowledgeBase, plan: Plan) -> str:
    names = breakdown_names(kb)
    for m in BREAKDOWN.finditer(text):
        for part in re.split(r",|\band\b", m["list"]):
            words = part.split()
            for size in range(min(3, len(words)), 0, -1):
                target = lookup_breakdown(" ".join(words[:size]), names)
                if target:
                    if target not in plan.breakdown:
                        plan.breakdown.append(target)
                    break
    for word, target in names.items():  # "monthly GMV", "daily orders"
        if word.endswith("ly") and phrase_rx(word).search(text) and target not in plan.breakdown:
            plan.breakdown.append(target)
    return text


def parse_ranking(text: str, kb: KnowledgeBase, plan: Plan) -> None:
    names = breakdown_names(kb)
    m = TOP.search(text)
    if m:
        n = m["n"].lower()
        plan.limit = int(n) if n.isdigit() else NUMBER_WORDS[n]
        plan.order_desc = m["dir"].lower() not in ASCENDING
        target = lookup_breakdown(" ".join(text[m.end() :].split()[:1]), names)
        if target and target not in plan.breakdown:
            plan.breakdown.insert(0, target)
        return
    m = WHICH.search(text)
    if m:
        target = lookup_breakdown(m["what"].split()[-1], names) or lookup_breakdown(m["what"], names)
        if target and target not in plan.breakdown:
            plan.breakdown.insert(0, target)
        plan.limit, plan.order_desc = 1, m["dir"].lower() not in ASCENDING
        return
    if RANKED.search(text):
        plan.order_desc = True


def parse_question(question: str, kb: KnowledgeBase, *, instructions: str = "") -> Plan:
    plan = Plan()
    hits, text = find_names(question, metric_names(kb))
    for _, name in hits:
        if name not in plan.metrics:
            plan.metrics.append(name)
    time = parse_time(text)
    if time:
        plan.period, plan.compare_to = time.period, time.compare_to
        for start, end in time.spans:
            text = blank(text, start, end)
    day_hits, text = find_names(
        text, [(s, f.name, False) for f in kb.day_filters.values() for s in f.synonyms]
    )
    if day_hits:
        plan.day_filter = day_hits[0][1]
        plan.used.append(f"day_filter:{plan.day_filter}")
    value_hits, text = find_names(text, value_names(kb))
    resolve_values(kb, [key for _, key in value_hits], plan)
    if instructions:  # defaults named in the instructions, for dimensions the question leaves open
        inst_hits, _ = find_names(instructions, value_names(kb))
        open_keys = [key for _, key in inst_hits if key.split(":")[1] not in plan.filters]
        resolve_values(kb, open_keys, plan)
    parse_ranking(text, kb, plan)
    parse_breakdowns(text, kb, plan)
    for target in plan.breakdown:
        plan.used.append(f"grain:{target}" if target in kb.time_grains else f"dimension:{target}")
    return plan
