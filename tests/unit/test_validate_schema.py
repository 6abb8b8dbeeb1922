"""The JSON Schema of sqlcanary.yml (bot/config/sqlcanary.schema.json, shipped in the wheel for editors): it is
what bot.config.schema generates from the Config model, a valid draft 2020-12 schema, accepts every real config
(the shop's, the one `init` writes) and rejects each typo that `load_config` rejects."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator  # installed with openapi-schema-validator (the test extras)

from bot.base.errors import ConfigError
from bot.config.model import load_config
from bot.config.scaffold import template_text
from bot.config.schema import SCHEMA_FILE, SCHEMA_URL, config_schema, schema_text

REPO = Path(__file__).resolve().parents[2]
SHOP_CONFIG = REPO / "benchmarks" / "shop" / "sqlcanary.yml"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_shipped_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "bot/config/sqlcanary.schema.json is stale: run `python -m bot.config.schema`"
    )
    assert config_schema()["$id"] == SCHEMA_URL and SCHEMA_URL.endswith("/bot/config/sqlcanary.schema.json")


def test_the_schema_ships_in_the_wheel() -> None:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert SCHEMA_FILE.name in data["bot.config"]


@pytest.mark.parametrize("text", [SHOP_CONFIG.read_text(encoding="utf-8"), template_text("sqlcanary.yml")])
def test_real_configs_validate(validator: Draft202012Validator, text: str) -> None:
    assert [e.message for e in validator.iter_errors(yaml.safe_load(text))] == []


def test_the_shorthands_the_model_accepts_validate(validator: Draft202012Validator) -> None:
    doc = {"agent": "gold", "gate": {"max_regressions": 1}, "preset": "bird", "statement_timeout": "30s"}
    assert list(validator.iter_errors(doc)) == []
    assert list(validator.iter_errors({"agent": {"spec": "llm", "env": "KEY", "inputs": "kb/**"}})) == []


TYPOS = [
    ("agnet: gold\n", "agnet"),
    ("agent:\n  spec: gold\n  timeot: 3\n", "timeot"),
    ("llm:\n  modle: x\n", "modle"),
    ("gate:\n  max_regresions: 1\n", "max_regresions"),
    ("kb:\n  path: [kb]\n", "path"),
    ("cache: {answer: false}\n", "answer"),
    ("preset: bird2\n", "bird2"),
    ("postgres: podman\n", "podman"),
]


@pytest.mark.parametrize(("text", "word"), TYPOS)
def test_each_typo_is_rejected_by_the_schema_and_by_the_loader(
    validator: Draft202012Validator, tmp_path: Path, text: str, word: str
) -> None:
    doc = {"suite": "."} | yaml.safe_load(text)
    errors = list(validator.iter_errors(doc))
    assert errors, f"the schema accepts {text!r}"
    assert any(word in str(e.message) or word in json.dumps(e.instance) for e in errors)
    (tmp_path / "sqlcanary.yml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=word):
        load_config(tmp_path / "sqlcanary.yml")


def test_the_shop_config_with_three_typos_is_rejected_three_times(validator: Draft202012Validator) -> None:
    doc = yaml.safe_load(SHOP_CONFIG.read_text(encoding="utf-8"))
    doc["agnet"] = doc.pop("agent")
    doc["kb"]["pahts"] = doc["kb"].pop("paths")
    doc["cache"] = {"answer": True}
    errors = list(validator.iter_errors(doc))
    assert len(errors) == 3
    said = " | ".join(e.message for e in errors)
    assert (
        "'agnet' was unexpected" in said
        and "'pahts' was unexpected" in said
        and "'answer' was unexpected" in said
    )
