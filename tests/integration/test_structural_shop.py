"""The structural diff on the shop's planted regressions, against the live schema of the shop fixture.

For every case a regression breaks, the gold is compared with the reference agent's answer from the planted KB
(the head) and from the shipped KB (the base, which passes). The head's message must name the planted edit; any
other difference it names must already separate the gold from the passing base answer (a genuine structural
difference the execution verdict found harmless), never a rewrite the canonicalisation should have removed.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
import yaml

from bot.base.fixture_files import trusted_fixtures
from bot.cases.loader import load_suite
from bot.db.templates import admin_connect, clone_database, drop_database, ensure_template
from bot.scoring.structural import schema_from_rows, structural_verdict
from bot.scoring.structural_diff import MESSAGE_LIMIT

pytestmark = pytest.mark.integration

SHOP = Path(__file__).resolve().parents[2] / "benchmarks" / "shop"
REGRESSIONS = sorted(p.stem for p in (SHOP / "regressions").glob("*.yml"))
Edit = Callable[[dict[str, str]], bool]
# What each planted regression changes, as a predicate on one difference of `details["differences"]`.
EDITS: dict[str, Edit] = {
    "cpc_wrong_denominator": lambda d: (
        d["part"] == "aggregates"
        and d["change"] == "differs"
        and "clicks" in d["gold"]
        and "impressions" in d["pred"]
    ),
    "dau_sum_not_avg": lambda d: (
        d["part"] == "aggregates"
        and d["change"] == "differs"
        and d["gold"].startswith("AVG(")
        and d["pred"].startswith("SUM(")
    ),
    "missing_tz_filter": lambda d: (
        d["part"] == "filters" and d["change"] == "missing" and ".tz_type = " in d["gold"]
    ),
    # the regressed KB also moves the tz condition of new users into a FILTER clause: the same edit
    "missing_tz_filter_too": lambda d: "tz_type" in d["gold"] + d["pred"],
    "sea_group_missing_ph": lambda d: (
        d["part"] == "filters"
        and d["change"] == "differs"
        and "'PH'" in d["gold"]
        and "'PH'" not in d["pred"]
    ),
    "stale_orders_table": lambda d: (
        d["part"] == "tables" and (d["gold"], d["pred"]) == ("orders", "orders_archive")
    ),
    "wrong_join_snippet": lambda d: (
        d["part"] == "joins" and d["change"] == "differs" and "order_item_id" in d["pred"]
    ),
    "snippet_missing_status_filter": lambda d: (
        d["part"] == "filters" and d["change"] == "missing" and "status = 'completed'" in d["gold"]
    ),
    "weekend_filter_removed": lambda d: d["change"] == "missing" and "calendar" in d["gold"],
    "ctr_ratio_swapped": lambda d: (
        "SUM(ads_daily_stats.clicks)" in d["gold"].split("/")[0]
        and "SUM(ads_daily_stats.impressions)" in d["pred"].split("/")[0]
    ),
    "vietnam_alias_renamed": lambda d: (
        d["part"] == "filters" and d["change"] == "missing" and "region_code = 'VN'" in d["gold"]
    ),
    "wrong_synonym": lambda d: (
        d["part"] == "aggregates" and "COUNT(DISTINCT" in d["gold"] and "DISTINCT" not in d["pred"]
    ),
}
# Cases whose gold and passing answer differ in structure, not only in spelling (a join written as IN, a CTE with
# FILTER versus two derived tables, count(*) versus count(order_id), an extra upper bound the data never reaches).
STRUCTURALLY_DIFFERENT_BASES = {
    "shop-ads-search-ctr-yoy-dec",
    "shop-traffic-new-users-vn-2025",
    "shop-ads-spend-gmv-th-dec",
    "shop-commerce-aov-tw-h2",
    "shop-commerce-gmv-dec-vs-nov-id",
    "shop-commerce-gmv-latam-q4-vs-q3",
    "shop-commerce-gmv-orders-sg-nov",
    "shop-commerce-gmv-yoy-by-region-dec",
    "shop-commerce-gmv-yoy-th-nov",
    "shop-commerce-highest-aov-oct",
    "shop-commerce-orders-daily-co-last7",
    "shop-commerce-orders-vn-oct",
    "shop-eff-daily-orders-last7",
    "shop-mgmt-save-id-daily-dau",
    "shop-pers-active-shops-orders-id-nov",
    "shop-pers-official-gmv-by-region-q4",
    "shop-pers-official-my-top5-shops-2025",
    "shop-traffic-dau-daily-my-last7",
    "shop-traffic-dau-monthly-sg-h2",
    "shop-traffic-dau-single-day-tw",
    "shop-traffic-dau-weekend-th-nov",
    "shop-traffic-dau-yoy-id-nov",
}


# The gold's CTE with FILTER against two derived tables: the edit inside them cannot be told from the rewrite.
UNLOCATABLE = {"shop-traffic-dau-yoy-id-nov", "shop-ads-search-ctr-yoy-dec"}


@pytest.fixture(scope="module")
def shop_schema(pg_server) -> dict[str, dict[str, str]]:
    """The live schema of the shop fixture, read from a clone of its template as the runner reads it."""
    template, _ = ensure_template(
        pg_server, db_label="shop", files=trusted_fixtures([SHOP / "fixtures" / "shop.sql"])
    )
    name = "sqlcanary_test_structural_shop"
    clone_database(pg_server, template, name)
    try:
        with closing(admin_connect(pg_server, name)) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
            )
            return schema_from_rows(cur.fetchall())
    finally:
        drop_database(pg_server, name)


def _answers(suite: Path, ids: list[str]) -> dict[str, str]:
    spec = importlib.util.spec_from_file_location(
        f"shop_agent_{abs(hash(str(suite)))}_{len(ids)}", suite / "agent.py"
    )
    assert spec and spec.loader
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    cases = {c.id: c for c in load_suite(suite).cases}
    return {
        i: agent.answer({**cases[i].agent_payload(), "options": {"kb": str(suite / "kb")}})["sql"]
        for i in ids
    }


@pytest.mark.parametrize("name", REGRESSIONS)
def test_structural_message_names_the_planted_edit(name: str, shop_schema: dict, tmp_path: Path) -> None:
    suite = tmp_path / "shop"
    shutil.copytree(SHOP, suite, ignore=shutil.ignore_patterns("__pycache__"))
    breaks = yaml.safe_load((suite / "regressions" / f"{name}.yml").read_text())["breaks"]
    gold = {c.id: c.gold_sql[0] for c in load_suite(suite).cases}
    base = _answers(suite, breaks)
    done = subprocess.run(
        [sys.executable, str(suite / "regressions" / "apply.py"), name, "--kb", str(suite / "kb")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    head = _answers(suite, breaks)
    is_edit = EDITS[name]
    for case_id in breaks:
        before = structural_verdict(gold[case_id], base[case_id], schema=shop_schema)
        after = structural_verdict(gold[case_id], head[case_id], schema=shop_schema)
        changed = structural_verdict(base[case_id], head[case_id], schema=shop_schema)  # what the edit did
        assert before.match is True or case_id in STRUCTURALLY_DIFFERENT_BASES, (case_id, before.message)
        assert after.match is False and after.kind == "different_structure", (case_id, after.message)
        assert len(after.message) <= MESSAGE_LIMIT, (case_id, after.message)
        if case_id not in UNLOCATABLE:
            edits = [d for d in after.details["differences"] if is_edit(d)]
            assert edits, (case_id, after.message)
            named = after.message.split("; ")
            assert any(d["gold"][:40] in part and d["pred"][:40] in part for d in edits for part in named), (
                case_id,
                after.message,
            )
        # Anything else named must separate the gold from the passing base answer too, or sit in a part (or be
        # a text) that the edit changed between the base and the head answers.
        rewrites = {_key(d) for d in _differences(before)}
        edited = {d["pred"] for d in _differences(changed)} | {d["part"] for d in _differences(changed)}
        noise = [
            d
            for d in after.details["differences"]
            if not is_edit(d)
            and not (name == "missing_tz_filter" and EDITS["missing_tz_filter_too"](d))
            and _key(d) not in rewrites
            and not {d["part"], d["pred"]} & edited
        ]
        assert noise == [], (case_id, after.message)


def _differences(verdict) -> list[dict[str, str]]:
    return [] if verdict.match else list(verdict.details["differences"])


def _key(d: dict[str, str]) -> tuple[str, str, str, str]:
    return (d["part"], d["change"], d["gold"], d["pred"])
