"""The execution verdicts as data: annotated gold/prediction pairs in tests/fixtures/verdicts/*.sql.

Each pair runs through the real CLI (`sqlcanary run` with the `predictions:` agent) on PostgreSQL: once with the
default rules (VERDICTS.md), and once per evaluator preset for the pairs that carry a `presets:` annotation
(the comparison table of VERDICTS.md and a few more cells). Test ids are `file:name`.

Pair format (one pair per `-- name:`; header lines before the first `-- gold:`):

    -- name: columns swapped
    -- expect: pass                  pass | fail | invalid | undecidable (the default sqlcanary verdict)
    -- kind: permuted_columns        optional: the execution verdict kind
    -- flags: order_checked          optional: flags that must be present (comma or space separated)
    -- no_flags: ambiguous_ties      optional: flags that must be absent
    -- compare: {columns: subset}    optional: the case's compare options (a YAML flow mapping)
    -- details: {alternative: 1}     optional: items that must be in the verdict's details
    -- presets: bird=0 critic=0 test_suite=1 defog_exact=1 defog=1 spider2=1   optional: 1 | 0 | error
    -- question: Sort them by id       optional: the case's question (defog reads it for order words)
    -- note: free text               optional, repeatable
    -- gold:                         one block per gold alternative
    SELECT ...
    -- pred:                         exactly one
    SELECT ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.base.results import CaseResult, read_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verdicts"
SCHEMA = FIXTURES / "schema.sql"
DEFAULT_ROW_CAP = 1000  # limits.sql relies on it
PRESETS = ("bird", "critic", "test_suite", "defog_exact", "defog", "spider2")
EXPECTS = ("pass", "fail", "invalid", "undecidable")
CELLS = ("1", "0", "error")
HEADER_KEYS = {
    "name",
    "expect",
    "kind",
    "flags",
    "no_flags",
    "compare",
    "details",
    "presets",
    "note",
    "question",
}
BLOCK_KEYS = {"gold", "pred"}
QUESTION = "What does the gold query return?"  # neutral: defog treats "order"/"sort" in a question as ordered
DIRECTIVE = re.compile(r"^--\s*([a-z_]+):(.*)$")

pytestmark = pytest.mark.integration


class PairFileError(ValueError):
    pass


@dataclass(frozen=True)
class Pair:
    file: str
    line: int
    index: int
    name: str
    expect: str
    gold: tuple[str, ...]
    pred: str
    kind: str | None = None
    flags: tuple[str, ...] = ()
    no_flags: tuple[str, ...] = ()
    compare: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    presets: dict[str, str] | None = None
    question: str = QUESTION

    @property
    def case_id(self) -> str:
        return f"{Path(self.file).stem}-{self.index:02d}"

    @property
    def test_id(self) -> str:
        return f"{self.file}:{self.name}"


def _words(value: str) -> tuple[str, ...]:
    return tuple(w for w in re.split(r"[\s,]+", value) if w)


def _mapping(value: str, *, where: str) -> dict[str, Any]:
    loaded = yaml.safe_load(value)
    if not isinstance(loaded, dict):
        raise PairFileError(f"{where}: expected a YAML mapping, got {value!r}")
    return loaded


def _presets(value: str, *, where: str) -> dict[str, str]:
    cells = dict(w.partition("=")[::2] for w in _words(value))
    bad = {k: v for k, v in cells.items() if k not in PRESETS or v not in CELLS}
    if bad:
        raise PairFileError(f"{where}: bad presets {bad} (presets: {PRESETS}, cells: {CELLS})")
    return cells


def _build_pair(
    file: str, line: int, index: int, header: dict[str, str], blocks: list[tuple[str, str]]
) -> Pair:
    where = f"{file}:{line}"
    gold = tuple(sql for key, sql in blocks if key == "gold")
    preds = [sql for key, sql in blocks if key == "pred"]
    if header.get("expect") not in EXPECTS:
        raise PairFileError(f"{where}: `expect` must be one of {EXPECTS}")
    if not gold or len(preds) != 1 or not all([*gold, *preds]):
        raise PairFileError(f"{where}: a pair needs non-empty `-- gold:` blocks and exactly one `-- pred:`")
    return Pair(
        file=file,
        line=line,
        index=index,
        name=header["name"],
        expect=header["expect"],
        gold=gold,
        pred=preds[0],
        kind=header.get("kind") or None,
        flags=_words(header.get("flags", "")),
        no_flags=_words(header.get("no_flags", "")),
        compare=_mapping(header["compare"], where=where) if "compare" in header else None,
        details=_mapping(header["details"], where=where) if "details" in header else None,
        presets=_presets(header["presets"], where=where) if "presets" in header else None,
        question=header.get("question") or QUESTION,
    )


def _clean_sql(sql: str) -> str:
    """Drop trailing blank and comment lines (free text between pairs) and a final semicolon."""
    lines = sql.strip().splitlines()
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
        lines.pop()
    return "\n".join(lines).strip().rstrip(";").rstrip()


def parse_pairs(text: str, file: str) -> list[Pair]:
    """Read one annotated file. Comment lines that are not directives are free text (or SQL inside a block)."""
    pairs: list[Pair] = []
    header: dict[str, str] = {}
    blocks: list[tuple[str, str]] = []
    start = 0

    def flush() -> None:
        if header:
            cleaned = [(key, _clean_sql(sql)) for key, sql in blocks]
            pairs.append(_build_pair(file, start, len(pairs) + 1, header, cleaned))

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        m = DIRECTIVE.match(line)
        key, value = (m.group(1), m.group(2).split(" --")[0].strip()) if m else (None, "")
        stray = bool(line) and not line.startswith("--")
        if key == "name":
            flush()
            header, blocks, start = {"name": value}, [], number
        elif not header:
            if stray or key in BLOCK_KEYS | HEADER_KEYS:
                raise PairFileError(f"{file}:{number}: {line!r} before the first `-- name:`")
        elif key in BLOCK_KEYS:
            blocks.append((key, ""))
        elif blocks:
            if key in HEADER_KEYS:
                raise PairFileError(
                    f"{file}:{number}: `-- {key}:` belongs in a pair's header, before `-- gold:`"
                )
            blocks[-1] = (blocks[-1][0], f"{blocks[-1][1]}{raw}\n")
        elif key in HEADER_KEYS:
            header[key] = f"{header[key]} {value}" if key == "note" and key in header else value
        elif key is not None or stray:
            raise PairFileError(f"{file}:{number}: unknown directive or SQL outside a block: {line!r}")
    flush()
    return pairs


def load_pairs(folder: Path = FIXTURES) -> list[Pair]:
    files = sorted(p for p in folder.glob("*.sql") if p != folder / SCHEMA.name)
    return [pair for f in files for pair in parse_pairs(f.read_text(encoding="utf-8"), f.name)]


PAIRS = load_pairs()
PRESET_CELLS = [
    (preset, pair) for preset in PRESETS for pair in PAIRS if pair.presets and preset in pair.presets
]


# --- running the CLI ----------------------------------------------------------------------------------------


def _case(pair: Pair) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": pair.case_id,
        "question": pair.question,
        "gold_sql": pair.gold[0] if len(pair.gold) == 1 else list(pair.gold),
        "tags": [Path(pair.file).stem],
    }
    if pair.compare:
        case["compare"] = pair.compare
    return case


def run_pairs(folder: Path, dsn: str, pairs: list[Pair], *, preset: str | None) -> dict[str, CaseResult]:
    from bot.cli import main

    folder.mkdir(parents=True, exist_ok=True)
    suite = {
        "name": f"verdicts-{preset or 'default'}",
        "databases": {"v": str(SCHEMA)},
        "defaults": {"row_cap": DEFAULT_ROW_CAP},
        "cases": [_case(p) for p in pairs],
    }
    (folder / "suite.yml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    lines = [json.dumps({"id": p.case_id, "sql": p.pred}) for p in pairs]
    (folder / "pred.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["run", str(folder / "suite.yml"), "--agent", f"predictions:{folder / 'pred.jsonl'}"]
    argv += ["--dsn", dsn, "--out", str(folder / "run.json"), "--jobs", "1"]
    argv += ["--allow-invalid"]  # some golds fail on purpose: invalid cases are reported, not a failed run
    rc = main([*argv, "--preset", preset] if preset else argv)
    assert rc == 0, f"sqlcanary run ({preset or 'default'}) exited {rc}"
    cases = {c.id: c for c in read_run(folder / "run.json").cases}
    missing = sorted({p.case_id for p in pairs} - set(cases))
    assert not missing, f"cases missing from the run: {missing}"
    return cases


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str) -> dict[str, CaseResult]:
    return run_pairs(tmp_path_factory.mktemp("verdicts-default"), pg_dsn, PAIRS, preset=None)


@pytest.fixture(scope="module")
def preset_run(
    tmp_path_factory: pytest.TempPathFactory, pg_dsn: str
) -> Callable[[str], dict[str, CaseResult]]:
    """One run per preset, made on first use, with only the pairs that have a cell for that preset."""
    runs: dict[str, dict[str, CaseResult]] = {}

    def get(preset: str) -> dict[str, CaseResult]:
        if preset not in runs:
            pairs = [p for p in PAIRS if p.presets and preset in p.presets]
            runs[preset] = run_pairs(
                tmp_path_factory.mktemp(f"verdicts-{preset}"), pg_dsn, pairs, preset=preset
            )
        return runs[preset]

    return get


def _describe(case: CaseResult) -> str:
    v = case.verdicts.get("execution")
    verdict = "no execution verdict" if v is None else f"match={v.match} kind={v.kind} flags={list(v.flags)}"
    message = f" message={v.message!r} details={v.details}" if v is not None else ""
    return f"status={case.status} reason={case.reason!r} {verdict}{message}"


# --- the pair files themselves (no database) -----------------------------------------------------------------


def test_pair_files_cover_the_brief() -> None:
    assert len(PAIRS) >= 40
    assert len({p.case_id for p in PAIRS}) == len(PAIRS)
    assert len({p.test_id for p in PAIRS}) == len(PAIRS), "pair names must be unique within a file"
    table = [p for p in PAIRS if p.file == "evaluators.sql"][:16]
    assert all(p.presets and set(p.presets) == set(PRESETS) for p in table), "VERDICTS.md's 16 table rows"
    assert {p.expect for p in PAIRS} == set(EXPECTS)


def test_parser_reads_alternatives_options_and_cells() -> None:
    text = (
        "-- free text before the first pair\n"
        "-- name: two golds\n-- expect: pass   -- trailing comment\n-- flags: a, b\n"
        "-- compare: {columns: subset, abs_tol: 0.5}\n-- presets: bird=error spider2=1\n"
        "-- gold:\nSELECT 1;\n-- gold:\nSELECT\n  2\n-- pred:\n-- a comment kept in the SQL\nSELECT 2\n"
    )
    (pair,) = parse_pairs(text, "x.sql")
    assert (pair.name, pair.expect, pair.flags, pair.line) == ("two golds", "pass", ("a", "b"), 2)
    assert pair.gold == ("SELECT 1", "SELECT\n  2")
    assert pair.pred == "-- a comment kept in the SQL\nSELECT 2"
    assert pair.compare == {"columns": "subset", "abs_tol": 0.5}
    assert pair.presets == {"bird": "error", "spider2": "1"}
    assert pair.question == QUESTION
    (asked,) = parse_pairs(
        "-- name: n\n-- expect: pass\n-- question: Sort them\n-- gold:\nSELECT 1\n-- pred:\nSELECT 1\n",
        "q.sql",
    )
    assert asked.question == "Sort them"


@pytest.mark.parametrize(
    "text",
    [
        "-- name: n\n-- expect: maybe\n-- gold:\nSELECT 1\n-- pred:\nSELECT 1\n",
        "-- name: n\n-- expect: pass\n-- gold:\nSELECT 1\n",
        "-- name: n\n-- expect: pass\n-- presets: bird=2\n-- gold:\nSELECT 1\n-- pred:\nSELECT 1\n",
        "-- name: n\n-- expect: pass\n-- gold:\nSELECT 1\n-- kind: exact\n-- pred:\nSELECT 1\n",
        "-- name: n\n-- expct: pass\n-- gold:\nSELECT 1\n-- pred:\nSELECT 1\n",
        "SELECT 1\n",
    ],
    ids=["bad expect", "no pred", "bad cell", "header after block", "typo", "stray sql"],
)
def test_parser_rejects_malformed_pairs(text: str) -> None:
    with pytest.raises(PairFileError):
        parse_pairs(text, "bad.sql")


# --- the verdicts ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids=[p.test_id for p in PAIRS])
def test_default_verdict(pair: Pair, default_run: dict[str, CaseResult]) -> None:
    case = default_run[pair.case_id]
    got = _describe(case)
    verdict = case.verdicts.get("execution")
    if pair.expect == "invalid":
        assert case.status == "invalid", got
    else:
        assert verdict is not None, got
        expected = {"pass": ("passed", True), "fail": ("failed", False), "undecidable": (None, None)}[
            pair.expect
        ]
        assert verdict.match is expected[1], got
        if expected[0] is None:
            assert case.status != "passed", got
        else:
            assert case.status == expected[0], got
    if pair.kind is not None:
        assert verdict is not None and verdict.kind == pair.kind, got
    flags = set(verdict.flags) if verdict is not None else set()
    assert set(pair.flags) <= flags, got
    assert not set(pair.no_flags) & flags, got
    for key, value in (pair.details or {}).items():
        assert verdict is not None and verdict.details.get(key) == value, got


@pytest.mark.parametrize(
    ("preset", "pair"), PRESET_CELLS, ids=[f"{preset}:{pair.test_id}" for preset, pair in PRESET_CELLS]
)
def test_preset_verdict(preset: str, pair: Pair, preset_run: Callable[[str], dict[str, CaseResult]]) -> None:
    case = preset_run(preset)[pair.case_id]
    cell = pair.presets[preset] if pair.presets else ""
    got = f"{preset} should give {cell}: {_describe(case)}"
    assert case.status == ("passed" if cell == "1" else "failed"), got
    if cell == "error":
        verdict = case.verdicts.get("execution")
        assert verdict is not None and verdict.kind == "evaluator_error", got
