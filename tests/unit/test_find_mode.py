"""`find_mode`: the Action's mode from the event and input `mode`, without I/O; one registry entry per mode."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from bot.base.errors import ConfigError
from bot.github.event import EventContext
from bot.github.inputs import ActionInputs
from bot.modes import MODES, find_mode
from bot.modes.baseline import baseline
from bot.modes.check import check
from bot.modes.post import post
from bot.modes.sweep_leg import sweep_leg
from bot.modes.sweep_plan import sweep_plan
from bot.modes.sweep_report import sweep_report

ACTION_YML = Path(__file__).resolve().parents[2] / "action.yml"
EVENTS = ("pull_request", "push", "workflow_dispatch", "workflow_run")
RUNNABLE = ("check", "baseline", "sweep", "sweep-plan", "sweep-report", "post")


def event(name: str) -> EventContext:
    name_: Any = name  # an event the payload parser would refuse, for the error's test
    return EventContext(
        event_name=name_, repository="o/r", ref="refs/heads/main", head_sha="a" * 40, base_sha=None
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pull_request", "check"),
        ("push", "baseline"),
        ("workflow_dispatch", "sweep"),
        ("workflow_run", "post"),
    ],
)
def test_each_event_has_its_default_mode(name, expected):
    assert find_mode(event(name), ActionInputs()) == expected


@pytest.mark.parametrize("name", EVENTS)
@pytest.mark.parametrize("mode", RUNNABLE)
def test_input_mode_wins_over_the_event(name, mode):
    assert find_mode(event(name), ActionInputs(mode=mode)) == mode


@pytest.mark.parametrize("name", EVENTS)
def test_mode_repair_is_refused_with_exit_2(name):
    with pytest.raises(ConfigError, match=r"`repair` runs within `check` \(input `repair: true`\)") as err:
        find_mode(event(name), ActionInputs(mode="repair"))
    assert err.value.exit_code == 2


def test_an_event_without_a_default_needs_input_mode():
    with pytest.raises(ConfigError, match=r"no mode for a schedule event; set one of check, baseline") as err:
        find_mode(event("schedule"), ActionInputs())
    assert err.value.exit_code == 2
    assert find_mode(event("schedule"), ActionInputs(mode="sweep")) == "sweep"


def test_the_registry_holds_one_script_per_mode_and_says_which_evaluate_the_suite():
    scripts = {name: (entry.run, entry.evaluates) for name, entry in MODES.items()}
    assert scripts == {
        "check": (check, True),
        "baseline": (baseline, True),
        "sweep": (sweep_leg, True),
        "sweep-plan": (sweep_plan, False),
        "sweep-report": (sweep_report, False),
        "post": (post, False),
    }


@pytest.mark.parametrize("given", ["deploy", "checks", "sweep-plans"])
def test_a_mode_the_registry_does_not_hold_is_named_with_the_choices(given):
    with pytest.raises(
        ConfigError, match=rf"input `mode`: '{given}' is no mode of this action; one of check,"
    ) as err:
        find_mode(event("pull_request"), ActionInputs(mode=given))
    assert err.value.exit_code == 2


def test_action_yml_documents_every_mode():
    text = ACTION_YML.read_text(encoding="utf-8")
    described = re.search(r"mode:\n    description: >-\n      ([a-z| -]+?)\. ", text)
    assert described is not None
    assert described.group(1).split(" | ") == list(MODES)


def test_no_mode_imports_another():
    """The modes are independent scripts (what two share is a module beside them, bot.modes.setup or .step):
    read from the registry, so a new mode needs no list kept in step elsewhere."""
    modules = {entry.run.__module__ for entry in MODES.values()}
    for name in modules:
        tree = ast.parse(Path(importlib.import_module(name).__file__ or "").read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not imported & (modules - {name}), f"{name} imports another mode"
