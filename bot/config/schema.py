"""The JSON Schema of sqlcanary.yml, generated from the Config model, for editors (the YAML language server reads
the `# yaml-language-server: $schema=...` line `sqlcanary init` writes). It ships beside this module as
sqlcanary.schema.json; tests/unit/test_validate_schema.py fails when that file is not what this generates.

Regenerate it after changing a config model: `python -m bot.config.schema`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bot.config.model import HIDDEN_KEYS, Config
from bot.config.presets import PRESET_NAMES

SCHEMA_FILE = Path(__file__).with_name("sqlcanary.schema.json")
SCHEMA_URL = "https://raw.githubusercontent.com/sqlcanary/sqlcanary/main/bot/config/sqlcanary.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _or_string(prop: dict[str, Any]) -> dict[str, Any]:
    """A property that also takes one string where it takes a list or an object (the model's `before`
    validators turn `agent: gold` into `{spec: gold}` and `env: X` into `[X]`)."""
    keep = {k: v for k, v in prop.items() if k in ("default", "description", "title")}
    rest = {k: v for k, v in prop.items() if k not in keep}
    alternatives = rest["anyOf"] if list(rest) == ["anyOf"] else [rest]
    return {**keep, "anyOf": [{"type": "string"}, *alternatives]}


def config_schema() -> dict[str, Any]:
    """The schema of a sqlcanary.yml file: the Config model without the keys load_config sets itself."""
    schema = Config.model_json_schema(mode="validation")
    props = schema["properties"]
    for hidden in HIDDEN_KEYS:
        props.pop(hidden, None)
    props["agent"] = _or_string(props["agent"])
    agent = schema["$defs"]["AgentConfig"]["properties"]
    for key in ("inputs", "env"):
        agent[key] = _or_string(agent[key])
    props["preset"] = {
        "anyOf": [{"enum": list(PRESET_NAMES)}, {"type": "null"}],
        "default": None,
        "title": "Preset",
    }
    return {
        "$schema": DRAFT,
        "$id": SCHEMA_URL,
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
        "title": "sqlcanary.yml",
        "description": "sqlcanary's configuration: paths are relative to this file (see the README's Commands).",
    }


def schema_text() -> str:
    """What sqlcanary.schema.json holds: the schema as stable, indented JSON."""
    return json.dumps(config_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    """Write SCHEMA_FILE (or the path given) from the models."""
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_FILE
    target.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
