"""The structural scorer, driven by annotated pairs in tests/fixtures/structural/*.sql (no database)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.scoring.structural import PARTS, schema_from_rows, structural_verdict
from bot.scoring.structural_diff import MESSAGE_LIMIT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "structural"
SCHEMAS = {
    name: schema_from_rows(rows) for name, rows in json.loads((FIXTURES / "schemas.json").read_text()).items()
}
_DIRECTIVE = re.compile(
    r"--\s*(name|match|schema|with_schema|differs|kind|message|flags|gold|pred):\s*(.*?)\s*$"
)


@dataclass
class Pair:
    name: str
    where: str
    directives: dict[str, str] = field(default_factory=dict)
    gold: list[str] = field(default_factory=list)
    pred: list[str] = field(default_factory=list)


def read_pairs(path: Path) -> list[Pair]:
    """`-- name:` starts a pair; other directives annotate it; `-- gold:` / `-- pred:` start the SQL blocks."""
    pairs: list[Pair] = []
    block: list[str] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found = _DIRECTIVE.fullmatch(line.strip())
        if found and found[1] == "name":
            pairs.append(Pair(name=found[2], where=f"{path.name}:{number}"))
            block = None
        elif found and found[1] in ("gold", "pred"):
            block = getattr(pairs[-1], found[1])
        elif found and block is None and pairs:
            pairs[-1].directives[found[1]] = found[2]
        elif block is not None:
            block.append(line)
    return pairs


def _split(value: str) -> set[str]:
    return {item.strip() for item in value.split(",") if item.strip()}


ALL_PAIRS = [pair for path in sorted(FIXTURES.glob("*.sql")) for pair in read_pairs(path)]


def test_fixtures_cover_enough_pairs() -> None:
    assert len(ALL_PAIRS) >= 25
    assert len({p.name for p in ALL_PAIRS}) == len(ALL_PAIRS), "pair names must be unique"
    for pair in ALL_PAIRS:
        assert "match" in pair.directives, pair.where
        assert _split(pair.directives.get("differs", "")) <= set(PARTS), pair.where


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=[p.name for p in ALL_PAIRS])
def test_pair(pair: Pair) -> None:
    d = pair.directives
    schema = SCHEMAS[d["schema"]] if "schema" in d else None
    verdict = structural_verdict("\n".join(pair.gold).strip(), "\n".join(pair.pred).strip(), schema=schema)

    assert verdict.scorer == "structural"
    assert verdict.match == {"true": True, "false": False, "none": None}[d["match"]], (
        pair.where,
        verdict.message,
    )
    expected_kind = d.get("kind") or {"true": "same_structure", "false": "different_structure"}.get(
        d["match"]
    )
    assert verdict.kind == expected_kind, (pair.where, verdict.message)
    if verdict.kind == "same_structure":
        assert verdict.message == "same structure" and verdict.details == {}
    if verdict.kind == "different_structure":
        differs = _split(d.get("differs", ""))
        assert set(verdict.details["parts"]) == differs, (pair.where, verdict.message)
        first = next(part for part in PARTS if part in differs)
        assert next(iter(verdict.details["parts"])) == first, (pair.where, verdict.message)
        assert len(verdict.message) <= MESSAGE_LIMIT, (pair.where, verdict.message)
    if "message" in d:
        assert d["message"] in verdict.message, (pair.where, verdict.message)
    assert _split(d.get("flags", "")) <= set(verdict.flags), (pair.where, verdict.flags)


SCHEMALESS = [p for p in ALL_PAIRS if "schema" not in p.directives and p.directives["match"] != "none"]


@pytest.mark.parametrize("pair", SCHEMALESS, ids=[p.name for p in SCHEMALESS])
def test_pair_also_holds_with_the_schema(pair: Pair) -> None:
    """Qualifying against the live schema must not change a verdict, unless `-- with_schema:` says so."""
    d = pair.directives
    verdict = structural_verdict(
        "\n".join(pair.gold).strip(), "\n".join(pair.pred).strip(), schema=SCHEMAS["shop"]
    )
    expected = d.get("with_schema", d["match"])
    assert verdict.match == {"true": True, "false": False}[expected], (pair.where, verdict.message)
    if verdict.kind == "different_structure" and "with_schema" not in d:
        assert set(verdict.details["parts"]) == _split(d.get("differs", "")), (pair.where, verdict.message)


def test_details_list_each_difference_and_each_part() -> None:
    verdict = structural_verdict(
        "SELECT id FROM orders WHERE status = 'paid' AND amount > 1", "SELECT id FROM orders WHERE amount > 1"
    )
    assert verdict.details == {
        "differences": [
            {"part": "filters", "change": "missing", "gold": "orders.status = 'paid'", "pred": ""}
        ],
        "parts": {
            "filters": {
                "gold": ["orders.amount > 1", "orders.status = 'paid'"],
                "pred": ["orders.amount > 1"],
                "missing": ["orders.status = 'paid'"],
                "extra": [],
            }
        },
    }
    assert verdict.message == "filter missing in prediction: orders.status = 'paid'"


def test_same_pair_is_judged_differently_with_and_without_schema() -> None:
    gold, pred = "SELECT * FROM customers", "SELECT id, name, city FROM customers"
    assert structural_verdict(gold, pred, schema=SCHEMAS["shop"]).match is True
    without = structural_verdict(gold, pred)
    assert without.match is False and "no_schema" in without.flags


def test_unresolvable_column_is_flagged_with_schema() -> None:
    verdict = structural_verdict(
        "SELECT name FROM customers", "SELECT full_name FROM customers", schema=SCHEMAS["shop"]
    )
    assert "qualify_lenient:pred" in verdict.flags
    assert "qualify_lenient:gold" not in verdict.flags


def test_recursive_difference_keeps_inner_details() -> None:
    verdict = structural_verdict(
        "SELECT t.a FROM (SELECT a, count(*) AS n FROM x WHERE b = 1 GROUP BY a) t",
        "SELECT t.a FROM (SELECT a, count(*) AS n FROM x WHERE b = 2 GROUP BY a) t",
    )
    inner = verdict.details["parts"]["subqueries"]["inner"]
    assert inner["in"] == "_sub1"
    assert inner["parts"]["filters"]["missing"] == ["x.b = 1"]
    assert verdict.details["differences"] == [
        {
            "part": "filters",
            "change": "differs",
            "gold": "x.b = 1",
            "pred": "x.b = 2",
            "in": "derived table _sub1",
        }
    ]


def test_failing_pass_is_skipped_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.scoring import normalize

    def broken(expr, ctx):
        raise ValueError("boom")

    passes = tuple((name, broken if name == "simplify" else rule) for name, rule in normalize.PASSES)
    monkeypatch.setattr(normalize, "PASSES", passes)
    verdict = structural_verdict("SELECT id FROM orders WHERE a = 1", "SELECT id FROM orders WHERE a = 2")
    assert verdict.match is False
    assert "pass_skipped:simplify:gold" in verdict.flags and "pass_skipped:simplify:pred" in verdict.flags
    assert verdict.message.startswith("filter differs")
    # without simplify, the remaining passes still order nested connectors and comparison operands
    same = structural_verdict(
        "SELECT id FROM t WHERE (a = 1 OR 2 < b) AND c", "SELECT id FROM t WHERE c AND (b > 2 OR a = 1)"
    )
    assert same.match is True, same.message


@pytest.mark.parametrize(
    "pred",
    [
        "SELECT " + "(" * 3000 + "1" + ")" * 3000,
        "SELECT 1 FROM t WHERE " + " OR ".join(f"a = {i}" for i in range(300)),
        "\x00\x01 SELECT",
        "SELECT * FROM t WHERE a IN (SELECT b FROM u WHERE u.c = t.d AND EXISTS (SELECT 1 FROM v WHERE v.e = u.f))",
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
        "INSERT INTO t (a) SELECT b FROM u ON CONFLICT DO NOTHING",
        "CREATE TABLE z (a int); DROP TABLE z",
        "SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c) FROM t LATERAL (SELECT 1) l",
        "VACUUM t",
    ],
)
def test_never_raises_on_odd_input(pred: str) -> None:
    verdict = structural_verdict("SELECT a FROM t", pred, schema={"t": {"a": "integer"}})
    assert verdict.scorer == "structural"
    assert verdict.match in (False, None)


def test_schema_from_rows_keeps_order_and_accepts_mappings() -> None:
    rows = [
        ("orders", "id", "integer"),
        ("orders", "amount", "numeric"),
        {"table_name": "c", "column_name": "x", "data_type": None},
    ]
    assert schema_from_rows(rows) == {"orders": {"id": "integer", "amount": "numeric"}, "c": {"x": "unknown"}}
    assert list(schema_from_rows(rows)["orders"]) == ["id", "amount"]


def _truth(node, values: dict[str, bool]) -> bool:
    """Evaluate a boolean tree of AND / OR / NOT / parentheses over named boolean columns."""
    from sqlglot import exp

    if isinstance(node, exp.Paren):
        return _truth(node.this, values)
    if isinstance(node, exp.And):
        return _truth(node.this, values) and _truth(node.expression, values)
    if isinstance(node, exp.Or):
        return _truth(node.this, values) or _truth(node.expression, values)
    if isinstance(node, exp.Not):
        return not _truth(node.this, values)
    assert isinstance(node, exp.Column), node
    return values[node.name]


@pytest.mark.parametrize(
    "condition",
    ["(a OR b) AND c", "NOT (a OR b) AND c", "a OR (b AND NOT c)", "(a OR b) AND (c OR d) AND NOT (a AND d)"],
)
def test_normalised_text_parses_back_to_the_same_meaning(condition: str) -> None:
    import itertools

    import sqlglot
    from sqlglot import exp

    from bot.scoring.normalize import PassContext, run_passes

    original = sqlglot.parse_one(f"SELECT id FROM t WHERE {condition}", read="postgres")
    normalised, skipped = run_passes(original, PassContext())
    assert skipped == ()
    text = normalised.sql(dialect="postgres")
    reparsed = sqlglot.parse_one(text, read="postgres")
    strip = lambda tree: tree.transform(lambda n: n.this if isinstance(n, exp.Paren) else n)  # noqa: E731
    assert strip(reparsed) == strip(normalised), text  # the printed text is this very tree
    assert run_passes(reparsed, PassContext())[0].sql(dialect="postgres") == text  # and normalising is stable
    names = sorted({c.name for c in original.find_all(exp.Column) if c.name != "id"})
    for bits in itertools.product([False, True], repeat=len(names)):
        values = dict(zip(names, bits, strict=True))
        assert _truth(reparsed.args["where"].this, values) == _truth(original.args["where"].this, values), (
            text
        )
    if condition == "(a OR b) AND c":
        assert "(t.a OR t.b) AND t.c" in text


def test_message_stays_whole_and_short() -> None:
    from bot.scoring.structural_diff import Difference, message

    found = tuple(Difference("filters", "missing", gold=f"t.column_{i} = '{'x' * 60}'") for i in range(8))
    text = message(found)
    assert len(text) <= MESSAGE_LIMIT
    assert text.endswith("more") and text.count("filter missing in prediction") + int(text.split()[-2]) == 8
