"""Time ranges in questions: months, quarters, halves, years, dates, ranges, "last N days of", comparisons."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import date, timedelta

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTH_RX = "|".join(sorted(MONTHS, key=len, reverse=True))
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}


@dataclass(frozen=True)
class Period:
    start: date
    end: date  # inclusive
    kind: str  # day | month | quarter | half | year | range

    def shifted_years(self, years: int) -> Period:
        return Period(_add_years(self.start, years), _add_years(self.end, years), self.kind)

    def previous(self) -> Period:
        """The period of the same kind just before this one (the previous month, quarter, ...)."""
        if self.kind in ("month", "quarter", "half"):
            months = {"month": 1, "quarter": 3, "half": 6}[self.kind]
            start = _add_months(self.start, -months)
            return Period(start, self.start - timedelta(days=1), self.kind)
        if self.kind == "year":
            return self.shifted_years(-1)
        days = (self.end - self.start).days + 1
        return Period(self.start - timedelta(days=days), self.start - timedelta(days=1), self.kind)


@dataclass(frozen=True)
class Found:
    period: Period
    start: int
    end: int


def _add_years(d: date, years: int) -> date:
    try:
        return d.replace(year=d.year + years)
    except ValueError:  # 29 February
        return d.replace(year=d.year + years, day=28)


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _month(year: int, month: int, count: int = 1, kind: str = "month") -> Period:
    last = _add_months(date(year, month, 1), count) - timedelta(days=1)
    return Period(date(year, month, 1), last, kind)


def _iso(m: re.Match) -> Period:
    d = date.fromisoformat(m.group(0))
    return Period(d, d, "day")


def _month_day(m: re.Match) -> Period:
    d = date(int(m["y"]), MONTHS[m["m"].lower()], int(m["d"]))
    return Period(d, d, "day")


PATTERNS: list[tuple[re.Pattern[str], object]] = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), _iso),
    (re.compile(rf"\b(?P<m>{MONTH_RX})\.? (?P<d>\d{{1,2}}),? (?P<y>\d{{4}})\b", re.I), _month_day),
    (
        re.compile(rf"\b(?P<m>{MONTH_RX})\.?,? (?P<y>\d{{4}})\b", re.I),
        lambda m: _month(int(m["y"]), MONTHS[m["m"].lower()]),
    ),
    (
        re.compile(r"\bQ(?P<q>[1-4]),? (?P<y>\d{4})\b", re.I),
        lambda m: _month(int(m["y"]), 3 * int(m["q"]) - 2, 3, "quarter"),
    ),
    (
        re.compile(r"\b(?:the )?(?P<o>first|second|third|fourth) quarter of (?P<y>\d{4})\b", re.I),
        lambda m: _month(int(m["y"]), 3 * ORDINALS[m["o"].lower()] - 2, 3, "quarter"),
    ),
    (
        re.compile(r"\bH(?P<h>[12]),? (?P<y>\d{4})\b", re.I),
        lambda m: _month(int(m["y"]), 6 * int(m["h"]) - 5, 6, "half"),
    ),
    (
        re.compile(r"\b(?:the )?(?P<o>first|second) half of (?P<y>\d{4})\b", re.I),
        lambda m: _month(int(m["y"]), 6 * ORDINALS[m["o"].lower()] - 5, 6, "half"),
    ),
    (re.compile(r"\b(?P<y>20\d{2})\b"), lambda m: _month(int(m["y"]), 1, 12, "year")),
]

EDGE = re.compile(r"\b(?P<edge>last|first) (?P<n>\d+) days (?:of|in) $", re.I)
RANGE_OPEN = re.compile(r"\b(?:between|from) $", re.I)
RANGE_JOIN = re.compile(r"^ (?:and|to|through|until) $", re.I)
VERSUS = re.compile(r"\b(?:vs\.?|versus|compared (?:with|to)|against)\b", re.I)
YOY = re.compile(
    r"\b(?:year[- ]over[- ]year|yoy|same period (?:of |in )?(?:the previous|last) year|a year (?:earlier|before))\b",
    re.I,
)
POP = re.compile(
    r"\b(?:month[- ]over[- ]month|mom|quarter[- ]over[- ]quarter|qoq|(?:the )?previous (?:month|quarter|period))\b",
    re.I,
)


def find_periods(text: str) -> list[Found]:
    """Non-overlapping base periods in order of appearance (the longest match wins at a position)."""
    hits = []
    for rx, build in PATTERNS:
        for m in rx.finditer(text):
            hits.append((m.start(), -(m.end() - m.start()), m.end(), build(m)))  # type: ignore[operator]
    out: list[Found] = []
    for start, _, end, period in sorted(hits, key=lambda h: (h[0], h[1])):
        if not out or start >= out[-1].end:
            out.append(Found(period, start, end))
    return out


def _merge_ranges(text: str, found: list[Found]) -> list[Found]:
    out: list[Found] = []
    for f in found:
        if out and RANGE_JOIN.match(text[out[-1].end : f.start]) and RANGE_OPEN.search(text[: out[-1].start]):
            first = out.pop()
            out.append(Found(Period(first.period.start, f.period.end, "range"), first.start, f.end))
        else:
            out.append(f)
    return out


def _apply_edges(text: str, found: list[Found]) -> list[Found]:
    out = []
    for f in found:
        m = EDGE.search(text[: f.start])
        if m:
            n = int(m["n"])
            p = f.period
            if m["edge"].lower() == "last":
                p = Period(p.end - timedelta(days=n - 1), p.end, "range")
            else:
                p = Period(p.start, p.start + timedelta(days=n - 1), "range")
            f = replace(f, period=p, start=m.start())
        out.append(f)
    return out


@dataclass(frozen=True)
class TimeAsk:
    period: Period
    compare_to: Period | None
    spans: tuple[tuple[int, int], ...]


def parse_time(text: str) -> TimeAsk | None:
    """The asked period and, for comparisons, the period to compare with; None when no period is named."""
    found = _apply_edges(text, _merge_ranges(text, find_periods(text)))
    if not found:
        return None
    spans = tuple((f.start, f.end) for f in found)
    main = found[0].period
    if len(found) >= 2 and VERSUS.search(text[found[0].end : found[1].start + 1]):
        return TimeAsk(main, found[1].period, spans)
    if YOY.search(text):
        return TimeAsk(main, main.shifted_years(-1), spans)
    if POP.search(text):
        return TimeAsk(main, main.previous(), spans)
    return TimeAsk(main, None, spans)


def strip_comparisons(text: str) -> str:
    return POP.sub(" ", YOY.sub(" ", VERSUS.sub(" ", text)))
