"""action.yml and the inputs model agree both ways; inputs are read as the runner passes them (hyphens kept,
underscores accepted, empty means unset) and a bad value names the input without echoing a secret."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.base.errors import ConfigError
from bot.github.inputs import OUTPUTS, ActionInputs, RunnerContext, input_names, read_inputs

ACTION = yaml.safe_load((Path(__file__).resolve().parents[2] / "action.yml").read_text())


def test_action_yml_declares_exactly_the_inputs_the_model_reads():
    assert set(ACTION["inputs"]) == set(input_names())


def test_action_yml_declares_exactly_the_outputs_the_action_writes():
    assert set(ACTION["outputs"]) == set(OUTPUTS)


def test_action_yml_defaults_are_the_models_defaults():
    defaults = ActionInputs()
    for name, spec in ACTION["inputs"].items():
        if "default" not in spec or "${{" in str(spec["default"]):
            continue
        field = name.replace("-", "_")
        parsed = read_inputs({f"INPUT_{name.upper()}": str(spec["default"])})
        assert getattr(parsed, field) == getattr(defaults, field), name


def test_the_action_is_a_docker_action_without_user_or_workdir():
    assert ACTION["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    lines = [ln.strip() for ln in dockerfile.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert not any(ln.startswith(("USER", "WORKDIR")) for ln in lines)
    entry = [ln for ln in lines if ln.startswith("ENTRYPOINT")]
    assert entry and entry[-1].startswith('ENTRYPOINT ["/') and '"action"' in entry[-1]


def test_inputs_as_the_runner_passes_them():
    got = read_inputs(
        {
            "INPUT_GITHUB-TOKEN": "ghs_secret",
            "INPUT_FAIL-ON-REGRESSION": "false",
            "INPUT_REPEAT": "3",
            "INPUT_SUITE": "  benchmarks/shop ",
            "INPUT_MODE": "",
            "INPUT_CHECK_RUN": "False",
            "INPUT_SHARD": "2/4",
        }
    )
    assert got.github_token == "ghs_secret" and got.fail_on_regression is False and got.repeat == 3
    assert (
        got.suite == "benchmarks/shop" and got.mode is None and got.check_run is False and got.shard == "2/4"
    )
    assert "ghs_secret" not in repr(got)
    assert read_inputs({}) == ActionInputs()


@pytest.mark.parametrize(
    "env,named",
    [
        (
            {"INPUT_MODE": "Deploy; rm -rf /"},
            "mode",
        ),  # a name, not any text (which modes: bot.modes.find_mode)
        ({"INPUT_REPEAT": "zero"}, "repeat"),
        ({"INPUT_REPEAT": "0"}, "repeat"),
        ({"INPUT_FAIL-ON-REGRESSION": "maybe"}, "fail-on-regression"),
        ({"INPUT_COMMENT": "always"}, "comment"),
        ({"INPUT_SHARD": "3/2"}, "shard"),
    ],
)
def test_a_bad_input_is_named(env, named):
    with pytest.raises(ConfigError, match=f"input `{named}`"):
        read_inputs(env)


def test_a_bad_secret_input_is_named_but_never_echoed():
    with pytest.raises(ConfigError) as err:
        read_inputs({"INPUT_GITHUB-TOKEN": "x" * 10, "INPUT_REPEAT": "many"})
    assert "xxxxxxxxxx" not in str(err.value)


def test_runner_context_needs_the_runner():
    with pytest.raises(ConfigError, match="GITHUB_EVENT_NAME"):
        RunnerContext.from_environ({})
    ctx = RunnerContext.from_environ(
        {
            "GITHUB_EVENT_NAME": "push",
            "GITHUB_EVENT_PATH": "/e.json",
            "GITHUB_REPOSITORY": "acme/agent",
            "GITHUB_RUN_ID": "9",
        }
    )
    assert (
        ctx.api_url == "https://api.github.com"
        and ctx.run_url == "https://github.com/acme/agent/actions/runs/9"
    )
