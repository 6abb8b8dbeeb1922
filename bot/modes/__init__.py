"""The Action's modes: `find_mode` (pure) picks one from the event and the inputs, and `MODES` holds one
straight script per mode, each over the leaf services (bot.check, bot.run, bot.sweep, bot.github's adapters).

A new mode is four files: its module here, one line in `MODES` (its script, and whether it evaluates the suite, so
that an embedded PostgreSQL is kept with the cache), its test, and its inputs in action.yml
(tests/unit/test_find_mode.py holds the registry and action.yml together). Input `mode` accepts what `MODES`
holds, said by `find_mode`."""

from __future__ import annotations

from bot.base.errors import ConfigError
from bot.github.event import EventContext
from bot.github.inputs import ActionInputs, Mode
from bot.modes.baseline import baseline
from bot.modes.check import check
from bot.modes.post import post
from bot.modes.step import ModeEntry, ModeFn, Step
from bot.modes.sweep_leg import sweep_leg
from bot.modes.sweep_plan import sweep_plan
from bot.modes.sweep_report import sweep_report

__all__ = ["DEFAULT_MODE", "MODES", "ModeEntry", "ModeFn", "Step", "find_mode"]

MODES: dict[str, ModeEntry] = {
    "check": ModeEntry(check, evaluates=True),
    "baseline": ModeEntry(baseline, evaluates=True),
    "sweep": ModeEntry(sweep_leg, evaluates=True),
    "sweep-plan": ModeEntry(sweep_plan),
    "sweep-report": ModeEntry(sweep_report),
    "post": ModeEntry(post),
}
# The mode of each event when input `mode` is unset.
DEFAULT_MODE: dict[str, Mode] = {
    "pull_request": "check",
    "push": "baseline",
    "workflow_dispatch": "sweep",
    "workflow_run": "post",
}


def find_mode(event: EventContext, inputs: ActionInputs) -> Mode:
    """Input `mode`, else the event's default; ConfigError (exit 2) for a mode the Action does not run."""
    mode = inputs.mode or DEFAULT_MODE.get(event.event_name)
    if mode == "repair":
        raise ConfigError(
            "input `mode`: `repair` runs within `check` (input `repair: true`); on a machine use "
            "`sqlcanary repair`"
        )
    if mode is None:
        raise ConfigError(
            f"input `mode`: no mode for a {event.event_name} event; set one of {', '.join(MODES)}"
        )
    if mode not in MODES:
        raise ConfigError(f"input `mode`: {mode!r} is no mode of this action; one of {', '.join(MODES)}")
    return mode
