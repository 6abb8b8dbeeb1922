"""`--perturb K` on a real PostgreSQL: wrong queries that return the gold's rows on the real data only fail as
`coincidental`, naming the copy and its change; equivalent rewrites still pass; `--perturb 0` is the plain run;
the copies are built once and hostile predictions leave them as they were."""

from __future__ import annotations

import json
import uuid
from contextlib import closing
from pathlib import Path

import psycopg2
import pytest
import yaml

from bot.base.results import read_run
from bot.cli import main
from bot.db.copies import copy_name
from bot.report.console import perturb_line

FIXTURE = """
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, city text);
CREATE TABLE orders (
  id serial PRIMARY KEY,
  customer_id int REFERENCES customers (id),
  amount numeric(10, 2) NOT NULL CHECK (amount >= 0),
  placed date NOT NULL
);
INSERT INTO customers (name, city) VALUES ('ada', 'Paris'), ('bob', 'Lyon'), ('cyd', 'Paris');
INSERT INTO orders (customer_id, amount, placed) VALUES
  (1, 50, '2024-01-10'), (1, 150, '2024-02-03'), (2, 250, '2024-02-20'), (3, 120, '2024-03-05'),
  (2, 80, '2024-03-15');
"""

# (id, gold, prediction, coincidental?) - each prediction returns the gold's rows on the data above.
PAIRS = [
    (
        "boundary",
        "SELECT id FROM orders WHERE amount >= 100",
        "SELECT id FROM orders WHERE amount > 100",
        True,
    ),
    (
        "left-join",
        "SELECT c.name, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.name",
        "SELECT c.name, count(o.id) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name",
        True,
    ),
    (
        "count-col",
        "SELECT count(customer_id) FROM orders WHERE amount > 60",
        "SELECT count(*) FROM orders WHERE amount > 60",
        True,
    ),
    (
        "distinct",
        "SELECT DISTINCT customer_id FROM orders WHERE amount > 100",
        "SELECT customer_id FROM orders WHERE amount > 100",
        True,
    ),
    (
        "not-less",
        "SELECT id FROM orders WHERE amount >= 100",
        "SELECT id FROM orders WHERE NOT (amount < 100)",
        False,
    ),
    (
        "between",
        "SELECT id FROM orders WHERE placed BETWEEN '2024-02-01' AND '2024-02-29'",
        "SELECT id FROM orders WHERE placed >= DATE '2024-02-01' AND placed <= DATE '2024-02-29'",
        False,
    ),
    (
        "join-order",
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.city = 'Paris'",
        "SELECT o.id, c.name FROM customers c, orders o WHERE o.customer_id = c.id AND c.city = 'Paris'",
        False,
    ),
]


def _suite(tmp_path: Path, label: str, pairs, *, defaults: dict | None = None) -> tuple[Path, Path]:
    (tmp_path / "shop.sql").write_text(FIXTURE)
    doc: dict = {
        "databases": {label: "shop.sql"},
        "cases": [{"id": i, "question": f"Case {i}?", "gold_sql": gold} for i, gold, _, _ in pairs],
    }
    if defaults:
        doc["defaults"] = defaults
    (tmp_path / "suite.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": i, "sql": pred}) + "\n" for i, _, pred, _ in pairs))
    return tmp_path / "suite.yml", preds


def _run(suite: Path, preds: Path, dsn: str, out: Path, *extra: str):
    code = main(
        ["run", str(suite), "--agent", f"predictions:{preds}", "--dsn", dsn, "--out", str(out), "-q", *extra]
    )
    assert code in (0, 1)
    return {c.id: c for c in read_run(out).cases}, read_run(out)


@pytest.fixture
def label() -> str:
    return (
        f"pt_{uuid.uuid4().hex[:8]}"  # a server kept across sessions keeps templates: a fresh label each time
    )


def test_perturb_zero_is_the_plain_run_and_copies_separate_coincidences(tmp_path, pg_dsn, label):
    suite, preds = _suite(tmp_path, label, PAIRS)
    plain, run0 = _run(suite, preds, pg_dsn, tmp_path / "p0.json", "--perturb", "0")
    assert {i: c.status for i, c in plain.items()} == {p[0]: "passed" for p in PAIRS}
    assert all("perturbed" not in c.verdicts for c in plain.values()) and run0.meta.perturb is None

    cases, run = _run(suite, preds, pg_dsn, tmp_path / "p3.json", "--perturb", "3")
    assert run.meta.perturb == 3
    line = perturb_line(run)
    assert line.startswith("--perturb 3: 3 pass(es) held on the perturbed copies, 4 coincidental"), line
    assert all(c.timings["perturbed_s"] > 0 for c in cases.values()), "the copies' time is reported per case"
    for case_id, _, _, coincidental in PAIRS:
        c = cases[case_id]
        if coincidental:
            assert (c.status, c.error_class, c.deciding_scorer) == ("failed", "coincidental", "perturbed"), c
            v = c.verdicts["perturbed"]
            assert "coincidental" in v.flags and v.details["changes"] and v.details["copy"] >= 1
            assert f"perturbed copy {v.details['copy']}" in c.reason and v.details["difference"] in c.reason
            assert c.verdicts["execution"].match is True, (
                "the real data agreed: that is what coincidental means"
            )
        else:
            assert c.status == "passed", (case_id, c.reason)
            assert c.verdicts["perturbed"].match is True and c.verdicts["perturbed"].details["copies"]

    # A saved run's predictions judged again on the copies, without the agent.
    again = tmp_path / "rescored.json"
    main(
        [
            "rescore",
            str(tmp_path / "p0.json"),
            str(suite),
            "--dsn",
            pg_dsn,
            "--out",
            str(again),
            "--perturb",
            "3",
            "-q",
        ]
    )
    rescored = {c.id: c.status for c in read_run(again).cases}
    assert rescored == {c.id: c.status for c in cases.values()}


def working_copies(dsn: str, templates: dict[str, int]) -> dict[str, int]:
    """{kept working copy: oid} of `templates` (bot.db.copies names them by their template)."""
    names = [copy_name(t, slot) for t in templates for slot in range(2)]
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT datname, oid FROM pg_database WHERE datname = ANY(%s)", (names,))
        return dict(cur.fetchall())


def test_copies_are_built_once_and_the_case_or_defaults_set_k(tmp_path, pg_dsn, label):
    def copies() -> dict[str, int]:
        with closing(psycopg2.connect(pg_dsn)) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT datname, oid FROM pg_database WHERE datname LIKE %s", (f"sqlcanary_t_{label}_%_x%",)
            )
            return dict(cur.fetchall())

    pairs = [PAIRS[0], PAIRS[4]]
    suite, preds = _suite(tmp_path, label, pairs, defaults={"perturb": 2})
    cases, run = _run(suite, preds, pg_dsn, tmp_path / "a.json")
    assert cases["boundary"].error_class == "coincidental" and cases["not-less"].status == "passed"
    built = copies()
    assert len(built) == 4, "a pool of max(K, 4) copies"
    kept = working_copies(pg_dsn, built)
    assert len(kept) == 4, "each copy used has a kept working copy"
    _run(suite, preds, pg_dsn, tmp_path / "b.json")
    assert copies() == built, "the same copies (name and oid): built once, reused"
    assert working_copies(pg_dsn, built) == kept, "their working copies leased again, not cloned and dropped"
    with closing(psycopg2.connect(pg_dsn)) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE %s AND datname !~ '_s[0-9]+$'",
            (f"sqlcanary_w_{label}_%",),
        )
        assert cur.fetchone()[0] == 0, "the run's clones of the perturbed copies are dropped"

    doc = yaml.safe_load(suite.read_text())
    doc["cases"][0]["perturb"] = 0  # a case's own value wins over the flag
    suite.write_text(yaml.safe_dump(doc))
    cases, _ = _run(suite, preds, pg_dsn, tmp_path / "c.json", "--perturb", "3")
    assert cases["boundary"].status == "passed" and "perturbed" not in cases["boundary"].verdicts


def test_compare_calls_a_pass_turned_coincidental_a_regression(tmp_path, pg_dsn, label):
    right = ("boundary", PAIRS[0][1], "SELECT id FROM orders WHERE 100 <= amount", False)
    (tmp_path / "base").mkdir()
    (tmp_path / "head").mkdir()
    base_suite, base_preds = _suite(tmp_path / "base", label, [right])
    head_suite, head_preds = _suite(tmp_path / "head", label, [PAIRS[0]])
    base, _ = _run(base_suite, base_preds, pg_dsn, tmp_path / "base.json", "--perturb", "2")
    head, _ = _run(head_suite, head_preds, pg_dsn, tmp_path / "head.json", "--perturb", "2")
    assert base["boundary"].status == "passed" and head["boundary"].error_class == "coincidental"
    out = tmp_path / "cmp.json"
    code = main(["compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--out", str(out)])
    assert code == 1, "a regression fails the gate"
    change = next(c for c in json.loads(out.read_text())["cases"] if c["id"] == "boundary")
    assert change["transition"] == "regressed"

    main(
        [
            "run",
            str(base_suite),
            "--agent",
            f"predictions:{base_preds}",
            "--dsn",
            pg_dsn,
            "--out",
            str(tmp_path / "b0.json"),
            "-q",
        ]
    )
    assert main(["compare", str(tmp_path / "b0.json"), str(tmp_path / "head.json")]) == 2, (
        "runs checked on different numbers of copies are not comparable"
    )


# Predictions that return the gold's count on the real data while reaching for an effect: on the copies they run
# as on the real database (the restricted role, a read-only transaction rolled back).
EFFECTS = [
    "(SELECT set_config('search_path', 'pg_temp', false)) IS NOT NULL",
    "(SELECT set_config('statement_timeout', '1', false)) IS NOT NULL",
    "pg_advisory_lock(4242) IS NOT NULL",
    "pg_notify('sqlcanary', 'x') IS NULL",
    "nextval('orders_id_seq') > 0",
    "pg_read_file('/etc/hostname') IS NOT NULL",
    "lo_import('/etc/hostname') > 0",
    "(SELECT count(*) FROM (SELECT id FROM orders FOR UPDATE) l) >= 0",
    "(SELECT count(*) FROM pg_sleep(0)) >= 0",
]


def _copy_contents(dsn: str, label: str) -> dict[str, str]:
    """Each copy template's rows, read from a fresh clone of it (templates take no connections)."""
    out = {}
    with closing(psycopg2.connect(dsn)) as conn:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", (f"sqlcanary_t_{label}_%_x%",)
            )
            for (name,) in cur.fetchall():
                probe = f"probe_{uuid.uuid4().hex[:8]}"
                cur.execute(f'CREATE DATABASE {probe} TEMPLATE "{name}"')
                try:
                    pdsn = psycopg2.extensions.make_dsn(dsn, dbname=probe)
                    with closing(psycopg2.connect(pdsn)) as pconn, pconn.cursor() as pcur:
                        pcur.execute(
                            "SELECT md5(concat((SELECT string_agg(o::text, ',' ORDER BY o.id) FROM orders o),"
                            " (SELECT string_agg(c::text, ',' ORDER BY c.id) FROM customers c),"
                            " (SELECT string_agg(p::text, ',' ORDER BY p.ord) FROM _sqlcanary.perturbation p),"
                            " (SELECT last_value FROM orders_id_seq)))"
                        )
                        out[name] = pcur.fetchone()[0]
                finally:
                    cur.execute(f"DROP DATABASE {probe} WITH (FORCE)")
    return out


def test_hostile_predictions_fail_cleanly_and_leave_every_copy_pristine(tmp_path, pg_dsn, label):
    canary = ("canary", PAIRS[4][1], PAIRS[4][2], False)
    pairs = [canary]
    for i, effect in enumerate(EFFECTS):
        gold = "SELECT count(*) FROM orders"
        pairs += [
            (f"effect{i}", gold, f"SELECT count(*) FROM orders WHERE {effect}", False),
            (f"canary{i}", *canary[1:]),
        ]
    suite, preds = _suite(tmp_path, label, pairs)
    _run(suite, preds, pg_dsn, tmp_path / "warm.json", "--perturb", "4", "--jobs", "1")
    before = _copy_contents(pg_dsn, label)
    assert len(before) == 4

    cases, run = _run(suite, preds, pg_dsn, tmp_path / "run.json", "--perturb", "4", "--jobs", "1")
    assert run.summary.errored == 0
    for case_id, c in cases.items():
        if case_id.startswith("canary"):
            assert c.status == "passed" and c.verdicts["perturbed"].match is True, (case_id, c.reason)
        else:
            assert c.status in ("passed", "failed") and (c.status == "passed" or c.reason), (case_id, c)
    reached = [i for i, c in cases.items() if i.startswith("effect") and "perturbed" in c.verdicts]
    assert len(reached) >= 3, "some effects passed on the real data and so ran on every copy"
    assert _copy_contents(pg_dsn, label) == before, "no prediction changed a copy"
