"""`sweep plan`: the grid file (settings, axes, a default repeat; errors name the file, the line and the key), the
matrix's shape (one entry per setting x shard, unset fields omitted) and GitHub's limits (exit 2, naming them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.base.errors import SqlcanaryError
from bot.cli import main
from bot.config.llm import LLMSettings
from bot.sweep.grid import load_grid
from bot.sweep.leg import leg_environ, leg_path, parse_setting
from bot.sweep.plan import MAX_MATRIX_JOBS, dispatch_inputs_problem, plan_matrix

GRID = """\
settings:
  - {name: small, model: qwen2.5-coder-1.5b, temperature: 0}
  - {name: ref, agent: gold, repeat: 1}
repeat: 3
"""
AXES = """\
axes:
  model: [gpt-4o-mini, gpt-4o]
  temperature: [0, 0.7]
repeat: 3
"""


def grid(tmp_path, text: str = GRID):
    path = tmp_path / "grid.yml"
    path.write_text(text)
    return path


def test_settings_alone_are_those_settings_and_a_settings_own_repeat_wins(tmp_path):
    settings = load_grid(grid(tmp_path))
    assert [s.name for s in settings] == ["small", "ref"]
    assert settings[1].repeat == 1 and settings[0].repeat == 3  # a setting's own repeat wins over the file's


def test_axes_alone_are_their_product_named_from_their_values(tmp_path):
    settings = load_grid(grid(tmp_path, AXES))
    assert [s.name for s in settings] == ["gpt-4o-mini-t0", "gpt-4o-mini-t0.7", "gpt-4o-t0", "gpt-4o-t0.7"]
    assert (settings[1].model, settings[1].temperature, settings[1].repeat) == ("gpt-4o-mini", 0.7, 3)


def test_plan_prints_one_entry_per_setting_and_shard_without_unset_fields(tmp_path, capsys):
    out = tmp_path / "matrix.json"
    assert main(["sweep", "plan", "--grid", str(grid(tmp_path)), "--shards", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    matrix = json.loads(printed)
    assert json.loads(out.read_text()) == matrix
    include = matrix["include"]
    assert len(include) == 2 * 2
    assert include[0] == {
        "setting": "small",
        "index": 1,
        "shard": "1/2",
        "leg": "small-1-of-2",
        "model": "qwen2.5-coder-1.5b",
        "temperature": 0.0,
        "repeat": 3,
    }
    assert include[3] == {
        "setting": "ref",
        "index": 2,
        "shard": "2/2",
        "leg": "ref-2-of-2",
        "agent": "gold",
        "repeat": 1,
    }
    assert len({e["leg"] for e in include}) == len(include)  # one artifact name per job
    assert {(e["setting"], e["shard"]) for e in include} == {
        (s, f"{i}/2") for s in {e["setting"] for e in include} for i in (1, 2)
    }
    assert "\n" not in printed.strip()  # one line: GITHUB_OUTPUT takes name=value lines


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "settings:\n  - {name: a}\n  - {name: 'x/y'}\n",
            "grid.yml:3: `settings[1].name`: a setting name is",
        ),
        ("settings:\n  - {name: a, temperature: 3}\n", "grid.yml:2: `settings[0].temperature`"),
        ("settings:\n  - {name: a, colour: red}\n", "`settings[0].colour`: Extra inputs are not permitted"),
        ("axes:\n  model: []\n", "`axes.model`"),
        ("settings:\n  - {name: a}\n  - {name: a}\n", "setting name 'a' is used twice"),
        ("repeat: 2\n", "no setting"),
        ("- a\n", "a grid is a mapping"),
        ("settings: [{name: a}\n", "unparsable YAML"),
    ],
)
def test_a_bad_grid_exits_2_naming_the_file_and_the_key(tmp_path, capsys, text, words):
    assert main(["sweep", "plan", "--grid", str(grid(tmp_path, text))]) == 2
    err = capsys.readouterr().err
    assert "grid.yml" in err and words in err


def test_over_256_matrix_jobs_exits_2_naming_the_limit_and_the_numbers(tmp_path, capsys):
    models = ", ".join(f"m{i}" for i in range(129))
    path = grid(tmp_path, f"axes:\n  model: [{models}]\n")
    assert main(["sweep", "plan", "--grid", str(path), "--shards", "2"]) == 2
    err = capsys.readouterr().err
    assert "258 matrix jobs (129 setting(s) x 2 shard(s))" in err and f"at most {MAX_MATRIX_JOBS}" in err
    assert main(["sweep", "plan", "--grid", str(path), "--shards", "1"]) == 0  # 129 jobs: fine


def test_an_output_over_1_mb_exits_2_naming_the_limit(tmp_path):
    """Validated settings cannot reach 1 MB in 256 jobs (an agent spec is at most 500 characters): the guard is
    shown with a setting built past the validation."""
    longest = load_grid(grid(tmp_path, "axes:\n  agent: ['" + "x" * 500 + "']\n  temperature: [0, 1]\n"))
    assert len(json.dumps(plan_matrix(longest, 128))) < 1024 * 1024  # 256 jobs of the longest settings
    big = [longest[0].model_copy(update={"agent": "z" * 5000})]
    with pytest.raises(
        SqlcanaryError, match=r"bytes of JSON; a job's outputs are at most 1048576 bytes"
    ) as err:
        plan_matrix(big, 256)
    assert err.value.exit_code == 2


def test_shards_out_of_range_exit_2(tmp_path):
    with pytest.raises(SqlcanaryError, match="--shards"):
        plan_matrix(load_grid(grid(tmp_path)), 0)


def test_a_workflow_with_more_than_25_dispatch_inputs_is_named(tmp_path):
    inputs = "".join(f"      i{n}: {{type: string}}\n" for n in range(26))
    wf = tmp_path / "wf.yml"
    wf.write_text(f"on:\n  workflow_dispatch:\n    inputs:\n{inputs}jobs: {{}}\n")
    assert "26 workflow_dispatch inputs; GitHub accepts at most 25" in (dispatch_inputs_problem(wf) or "")
    wf.write_text(f"on:\n  workflow_dispatch:\n    inputs:\n{inputs.split(chr(10), 1)[1]}jobs: {{}}\n")
    assert dispatch_inputs_problem(wf) is None


def test_a_matrix_entry_becomes_the_legs_request_environment_and_file(tmp_path):
    entry, shard = parse_setting(
        json.dumps(
            {"setting": "hot", "index": 2, "shard": "2/3", "model": "m", "temperature": 0.7, "os": "x"}
        )
    )
    assert (entry.name, entry.index, str(shard)) == ("hot", 2, "2/3")
    assert leg_path(tmp_path, entry.name, shard) == tmp_path / "sweep" / "hot" / "shard-2-of-3.json"
    env = leg_environ({"SQLCANARY_LLM_MODEL": "from-input"}, entry)
    llm = LLMSettings().with_env(env)
    assert (llm.model, llm.temperature) == ("m", 0.7)  # the llm agent's client applies with_env the same way
    _, other = parse_setting(json.dumps({"setting": "hot", "shard": "1/3"}), shard="3/3")
    assert str(other) == "3/3"  # input `shard` wins


@pytest.mark.parametrize(
    "text,words",
    [
        ("not json", "input `setting`: not JSON"),
        ("[1]", "expected a JSON object"),
        ('{"setting": "../up"}', "`setting`"),
        ('{"setting": "a", "temperature": "hot"}', "`temperature`"),
    ],
)
def test_a_bad_setting_input_names_the_input(text, words):
    with pytest.raises(SqlcanaryError, match="input `setting`") as err:
        parse_setting(text)
    assert words in str(err.value) and err.value.exit_code == 2


def test_a_bad_temperature_override_is_refused():
    with pytest.raises(SqlcanaryError, match="SQLCANARY_LLM_TEMPERATURE"):
        LLMSettings().with_env({"SQLCANARY_LLM_TEMPERATURE": "5"})


REPO = Path(__file__).resolve().parents[2]


def test_the_example_grid_plans_and_no_workflow_has_more_than_25_dispatch_inputs():
    """The 25 workflow_dispatch inputs limit belongs to workflow files: every one shipped is checked here."""
    example = REPO / "examples" / "sweeps" / "grid.yml"
    if example.is_file():
        names = [e["setting"] for e in plan_matrix(load_grid(example), 2)["include"]]
        assert len(names) == len(set(names)) * 2
    workflows = sorted((REPO / "examples" / "workflows").glob("*.yml"))
    workflows += sorted((REPO / ".github" / "workflows").glob("*.yml"))
    for wf in workflows:
        assert dispatch_inputs_problem(wf) is None
