"""The base decides, the head is tested: the config a pull request's head is evaluated with.

In a check, the head commit is the change under review, so nothing in it may loosen the rules it is judged by or
choose where data and secrets go. Its own `sqlcanary.yml` is read for what a pull request may rightly change (its
agent: `agent.spec`, `timeout`, `persistent`, `options`); every other setting comes from the base commit's config,
rebased onto the head's tree (paths stay relative to the config's folder, now in the head). What the head tried to
set otherwise is named, with why it was ignored, so the report can say so.

When the base has no config at all (the pull request that adds sqlcanary), the head's config is all there is: it
decides the suite and the gate, but never where data and secrets go (`dsn`, `postgres`, the `llm:` endpoint, key
and model, `agent.env`): those come from the inputs, or their defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.config.llm import LLMSettings
from bot.config.model import RESOLVED_MARK, RESOLVED_VERSION, AgentConfig, Config

# Settings that decide where data and secrets go; the rest of the base-only settings decide the verdict.
_ROUTING = ("dsn", "postgres", "llm", "agent.env")
_BASE_ONLY = (
    "suite",
    "dsn",
    "postgres",
    "jobs",
    "statement_timeout",
    "row_cap",
    "perturb",
    "preset",
    "out",
    "kb",
    "llm",
    "cache",
    "gate",
    "agent.inputs",
    "agent.env",
    "agent.remote",
)
_HEAD_AGENT = ("spec", "timeout", "persistent", "options")


def _get(config: Config, name: str) -> Any:
    top, _, sub = name.partition(".")
    value = getattr(config, top)
    if sub:
        return getattr(value, sub) if value is not None else None
    return value


def _shown(value: Any) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_defaults=True)
    text = json.dumps(value, default=str, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


def _why(name: str) -> str:
    if name.partition(".")[0] in _ROUTING or name in _ROUTING:
        return "a pull request cannot choose where data and secrets go"
    return "a pull request cannot change the rules it is judged by"


def _plain_llm(agent: AgentConfig, notes: list[str]) -> dict[str, Any]:
    """An `llm` agent's spec and options without what would make it read another config than the one it is
    given (`llm:FILE`, `options.config`), each dropped one named in `notes`; other agents unchanged."""
    kind, _, arg = agent.spec.partition(":")
    if kind.strip() != "llm":
        return {"spec": agent.spec, "options": agent.options}
    if arg.strip():
        notes.append(
            f"the head's agent `{agent.spec}` is run as `llm`, with the base's or the inputs' `llm:` settings, "
            f"never a file the head names ({_why('llm')})"
        )
    if "config" in agent.options:
        notes.append(f"the head's `agent.options.config` is ignored ({_why('llm')})")
    return {"spec": "llm", "options": {k: v for k, v in agent.options.items() if k != "config"}}


def _head_agent(head: Config, base: Config, notes: list[str]) -> AgentConfig | None:
    """The head's agent (what the pull request may change) with the base's cache and environment settings. An
    `llm` agent reads its settings from the config it is given, never from a file or option the head names."""
    if head.agent is None and base.agent is None:
        return None
    own = head.agent or base.agent
    assert own is not None
    kept = {k: getattr(own, k) for k in _HEAD_AGENT}
    kept.update(_plain_llm(own, notes))
    fallback = base.agent or AgentConfig(spec=str(kept["spec"]))
    return AgentConfig(**kept, inputs=fallback.inputs, env=fallback.env, remote=fallback.remote)


def head_config(head: Config, base: Config, *, base_dir: str) -> tuple[Config, tuple[str, ...]]:
    """The config the head is evaluated with (the base's, with the head's agent, rebased to `base_dir`: the
    config's folder in the head's tree) and a note for each head setting that was ignored."""
    notes: list[str] = []
    agent = _head_agent(head, base, notes)
    for name in _BASE_ONLY:
        mine, theirs = _get(head, name), _get(base, name)
        if name.startswith("agent.") and head.agent is None:
            continue
        if mine == theirs:
            continue
        if name == "dsn":  # a DSN may hold a password: named, never shown
            notes.append(f"the head's `dsn` is ignored; the base's config or the inputs decide: {_why(name)}")
            continue
        notes.append(
            f"the head's `{name}: {_shown(mine)}` is ignored; the base's config decides "
            f"(`{_shown(theirs)}`): {_why(name)}"
        )
    resolved = base.model_copy(update={"agent": agent, "base_dir": base_dir, "config_file": head.config_file})
    return resolved, tuple(notes)


def head_config_alone(head: Config) -> tuple[Config, tuple[str, ...]]:
    """The first pull request (no base config): the head's config, without what would route data or secrets."""
    notes: list[str] = []
    update: dict[str, Any] = {}
    defaults = Config(base_dir=head.base_dir)
    for name, default in (("dsn", None), ("postgres", defaults.postgres), ("llm", LLMSettings())):
        if getattr(head, name) != default:
            notes.append(f"the head's `{name}` is ignored: {_why(name)} (the base commit has no config yet)")
            update[name] = default
    if head.agent is not None and head.agent.env:
        notes.append(
            f"the head's `agent.env` is ignored: {_why('agent.env')} (the base commit has no config yet)"
        )
        update["agent"] = head.agent.model_copy(update={"env": ()})
    if head.agent is not None:
        agent = update.get("agent", head.agent)
        update["agent"] = agent.model_copy(update=_plain_llm(agent, notes))
    return head.model_copy(update=update), tuple(notes)


def decide_head_config(
    head: Config, base: Config | None, *, base_dir: str, suite_given: bool, trust_alone: bool
) -> tuple[Config, tuple[str, ...]]:
    """The config a check evaluates the head with, and a note for each head setting it ignored: the base's, with
    the head's agent, rebased to `base_dir` (`head_config`). A suite the head moved (the base's suite path is
    gone from the head's tree, the head's own exists, and the request named none: not `suite_given`) is evaluated
    where the head put it. Without a base config, the head's own config; unless `trust_alone`, without the
    settings that route data and secrets (`head_config_alone`)."""
    if base is None:
        return (head, ()) if trust_alone else head_config_alone(head)
    config, notes = head_config(head, base, base_dir=base_dir)
    moved = None if suite_given else _moved_suite(head, config)
    if moved is None:
        return config, notes
    kept = tuple(n for n in notes if not n.startswith("the head's `suite:"))
    note = (
        f"the suite moved from `{base.suite}` to `{moved}`: the head's cases there are compared case by case "
        "with the base's suite"
    )
    return config.model_copy(update={"suite": moved}), (*kept, note)


def _moved_suite(head: Config, config: Config) -> str | None:
    """The head's own suite path when the decided config's (the base's) is gone from the head's tree and the
    head's exists."""
    if not config.suite or config.path(config.suite).exists():
        return None
    own = head.suite
    if own and head.path(own).exists():
        return str(head.path(own).resolve())
    return None


def write_resolved(config: Config, path: Path) -> Path:
    """The resolved config as a file a child `sqlcanary run --config` loads as it is (bot.config.model.load_config),
    so the child and the built-in `llm` agent read exactly what the parent decided, and no file of the tree."""
    doc = {RESOLVED_MARK: RESOLVED_VERSION, "config": config.model_dump(mode="json")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path
