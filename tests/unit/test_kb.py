"""The KB schema and validator (bot.kb), the shipped shop KB, and the planted regression manifests."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from bot.base.errors import CaseFileError
from bot.kb import KbError, check_kb, load_kb, read_kb_dir, validate_kb

SHOP = Path(__file__).resolve().parents[2] / "benchmarks" / "shop"
KB = SHOP / "kb"

GOOD_METRIC = """\
name: refunds
description: Refunded orders.
synonyms: [refunds, refunded orders]
table: orders
expression: order_id
aggregation: count
filters:
  - status = 'refunded'
time_column: order_date
dimensions: [region]
"""


def shipped() -> dict[str, str]:
    return read_kb_dir(KB)


def errors_for(files: dict[str, str]) -> list[str]:
    return [str(p) for p in check_kb(files).errors]


def with_metric(text: str, name: str = "metrics/refunds.yaml") -> list[str]:
    return errors_for({**shipped(), name: text})


def load_apply_module():
    spec = importlib.util.spec_from_file_location("shop_regressions_apply", SHOP / "regressions" / "apply.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_kb_has_no_problems():
    assert validate_kb(KB) == []
    kb = load_kb(KB)
    assert {"dau", "gmv", "ctr", "items_sold"} <= set(kb.metrics)
    assert kb.where("metric:gmv").startswith("kb/metrics/gmv.yaml:1-")


def test_a_good_new_metric_validates():
    assert with_metric(GOOD_METRIC) == []


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("name: refunds\ndescription: x\nsynonyms: [refunds\n", 4, "unparsable YAML"),
        (GOOD_METRIC + "colour: red\n", 11, "unknown key 'colour'"),
        (
            GOOD_METRIC.replace("description: Refunded orders.\n", ""),
            1,
            "missing required field 'description'",
        ),
        (GOOD_METRIC.replace("synonyms: [refunds, refunded orders]", "synonyms: refunds"), 3, "synonyms"),
        (GOOD_METRIC.replace("aggregation: count", "aggregation: median"), 6, "unknown aggregation 'median'"),
        (GOOD_METRIC.replace("table: orders", "table: orders_v2"), 4, "table 'orders_v2' is not documented"),
        (GOOD_METRIC.replace("expression: order_id", "expression: refund_id"), 5, "column 'refund_id'"),
        (
            GOOD_METRIC.replace("dimensions: [region]", "dimensions: [planet]"),
            10,
            "unknown dimension 'planet'",
        ),
        (
            GOOD_METRIC.replace("name: refunds", "name: dau"),
            1,
            "duplicate metric name 'dau' (first in metrics/dau.yaml)",
        ),
        (
            GOOD_METRIC.replace("refunds, refunded orders", "refunds, GMV"),
            3,
            "synonym 'GMV' also belongs to metric 'gmv'",
        ),
        ("- just\n- a list\n", 1, "must hold a mapping"),
    ],
    ids=[
        "bad-yaml",
        "unknown-key",
        "missing-field",
        "wrong-type",
        "unknown-aggregation",
        "undocumented-table",
        "unknown-column",
        "unknown-dimension",
        "duplicate-name",
        "duplicate-synonym",
        "not-a-mapping",
    ],
)
def test_broken_metric_file_names_file_and_line(text: str, line: int, fragment: str):
    # "metrics/zz.yaml" sorts after every shipped metric, so the duplicate is reported in this file
    errors = with_metric(text, "metrics/zz.yaml")
    assert any(e.startswith(f"metrics/zz.yaml:{line}: error: ") and fragment in e for e in errors), errors


def test_ratio_metric_parts_must_exist_and_share_a_source():
    ratio = "name: r\ndescription: x\naggregation: ratio\nnumerator: gmv\ndenominator: nothing\n"
    assert any(
        "metrics/r.yaml:5:" in e and "no metric named 'nothing'" in e
        for e in with_metric(ratio, "metrics/r.yaml")
    )
    mixed = ratio.replace("nothing", "dau")
    [err] = [e for e in with_metric(mixed, "metrics/r.yaml") if "share a source" in e]
    # each part named with the line that sets its source: a fix must change one of them, or both
    assert re.search(r"'gmv' \(metrics/gmv\.yaml:\d+\) reads table orders", err), err
    assert re.search(r"'dau' \(metrics/dau\.yaml:\d+\) reads table daily_platform_activity", err), err
    with_table = ratio.replace("denominator: nothing", "denominator: orders\ntable: orders")
    assert any("remove 'table'" in e for e in with_metric(with_table, "metrics/r.yaml"))


def test_deprecated_table_is_a_warning_not_an_error():
    kb = check_kb(
        {**shipped(), "metrics/zz.yaml": GOOD_METRIC.replace("table: orders", "table: orders_archive")}
    )
    assert kb.errors == ()
    assert [str(p) for p in kb.problems] == [
        "metrics/zz.yaml:4: warning: table 'orders_archive' is marked deprecated in tables.yaml"
    ]


def test_dimension_and_recipe_cross_references():
    files = shipped()
    files["dimensions.yaml"] = files["dimensions.yaml"].replace(
        "members: [BR, MX, CO]", "members: [BR, MX, XX]"
    )
    files["recipes/close_shop.yaml"] = files["recipes/close_shop.yaml"].replace("(?P<shop_id>", "(?P<shop>")
    errors = errors_for(files)
    assert any(e.startswith("dimensions.yaml:") and "'XX' is not a value of 'region'" in e for e in errors)
    assert any(e.startswith("recipes/close_shop.yaml:4:") and "{shop_id}" in e for e in errors)


def test_missing_required_files_are_reported():
    files = {k: v for k, v in shipped().items() if k != "tables.yaml"}
    assert "tables.yaml: error: missing: every KB needs this file" in errors_for(files)


def test_load_kb_raises_with_file_and_line(tmp_path: Path):
    kb = tmp_path / "kb"
    shutil.copytree(KB, kb)
    (kb / "metrics" / "dau.yaml").write_text(
        (kb / "metrics" / "dau.yaml").read_text().replace("aggregation: avg", "aggregation: mean")
    )
    with pytest.raises(KbError) as info:
        load_kb(kb)
    assert isinstance(info.value, CaseFileError)
    assert str(info.value).startswith("kb/metrics/dau.yaml:8: unknown aggregation 'mean'")


def test_spans_point_at_the_exact_lines():
    kb = load_kb(KB)
    path, _, lines = kb.where("value:region:TH").rpartition(":")
    first, last = (int(n) for n in lines.split("-"))
    text = (SHOP / path).read_text().splitlines()[first - 1 : last]
    assert text == ["      - value: TH", "        aliases: [Thailand]"]


def test_every_regression_applies_cleanly_and_reverts(tmp_path: Path):
    apply = load_apply_module()
    assert len(apply.names()) >= 5
    for name in apply.names():
        kb = tmp_path / name / "kb"
        shutil.copytree(KB, kb)
        before = read_kb_dir(kb)
        data = apply.load_regression(name)
        assert data["breaks"], name
        changed = apply.apply_regression(name, kb)
        assert changed, name
        after = read_kb_dir(kb)
        assert after != before, name
        assert check_kb(after).errors == (), name  # a regression is wrong, not invalid
        apply.apply_regression(name, kb, revert=True)
        assert read_kb_dir(kb) == before, name


def test_a_regression_that_no_longer_applies_is_refused(tmp_path: Path):
    apply = load_apply_module()
    kb = tmp_path / "kb"
    shutil.copytree(KB, kb)
    apply.apply_regression("dau_sum_not_avg", kb)
    with pytest.raises(apply.RegressionError, match="occurs 0 times"):
        apply.apply_regression("dau_sum_not_avg", kb)


def test_a_regression_renders_as_a_patch_without_changing_the_kb():
    apply = load_apply_module()
    before = shipped()
    patch = apply.render_patch("missing_tz_filter", KB)
    assert patch.startswith("--- a/kb/metrics/dau.yaml\n+++ b/kb/metrics/dau.yaml\n")
    assert "-  - tz_type = 'local'\n" in patch and "+filters: []\n" in patch
    assert shipped() == before
