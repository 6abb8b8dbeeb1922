"""One rate parser (bot.base.rates) for `run`, `check`, `compare` and the config's `gate:`: `90%` and `0.9` mean
the same, `90` is refused with the fix, and nothing reads as 9000%."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.base.errors import EXIT_BAD_INPUT, ConfigError
from bot.base.rates import RateError, parse_rate
from bot.cli import build_parser, main
from bot.config.gate_settings import GateSettings
from bot.config.model import find_config

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


@pytest.mark.parametrize(
    ("value", "rate"),
    [
        ("0.9", 0.9),
        ("90%", 0.9),
        (" 90 % ", 0.9),
        ("100%", 1.0),
        ("0", 0.0),
        ("1", 1.0),
        (0.75, 0.75),
        (1, 1.0),
    ],
)
def test_a_rate_is_a_fraction_or_a_percentage(value: object, rate: float) -> None:
    assert parse_rate(value, name="--min-pass-rate") == pytest.approx(rate)


def test_a_bare_number_above_one_is_refused_with_the_fix() -> None:
    with pytest.raises(RateError) as caught:
        parse_rate("90", name="--min-pass-rate")
    assert str(caught.value) == "--min-pass-rate 90: a rate is 0-1 or a percentage: did you mean 90%?"


@pytest.mark.parametrize("value", ["120%", "-0.1", "150", "lots", "nan", "inf", "", True, None, "90%%"])
def test_what_is_not_a_rate_is_refused_naming_the_setting(value: object) -> None:
    with pytest.raises(RateError, match="^--max-pass-rate-drop"):
        parse_rate(value, name="--max-pass-rate-drop")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--min-pass-rate", "{rate}"],
        ["rescore", "run.json", "--min-pass-rate", "{rate}"],
        ["check", "--min-pass-rate", "{rate}"],
        ["check", "--max-pass-rate-drop", "{rate}"],
        ["compare", "base.json", "head.json", "--min-pass-rate", "{rate}"],
    ],
)
def test_every_command_reads_rates_the_same_way(argv: list[str]) -> None:
    """Before: `run` took `90%` for an invalid float and `90` for 9000%; `check` and `compare` the reverse."""
    parser = build_parser()
    flag = argv[-2].lstrip("-").replace("-", "_")
    for typed, rate in (("90%", 0.9), ("0.9", 0.9), ("5%", 0.05)):
        args = parser.parse_args([a.format(rate=typed) for a in argv])
        assert getattr(args, flag) == pytest.approx(rate)


@pytest.mark.parametrize("command", [["run"], ["check"], ["compare", "b.json", "h.json"]])
def test_90_is_refused_with_the_fix_on_every_command(command: list[str], capsys) -> None:
    assert main([*command, "--min-pass-rate", "90"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--min-pass-rate 90: a rate is 0-1 or a percentage: did you mean 90%?" in err
    assert "9000" not in err


def test_compare_gates_on_a_percentage(capsys) -> None:
    base, head = str(RUNS / "k1_base.json"), str(RUNS / "k1_head.json")
    lenient = ["--max-regressions", "99", "--allow-removed", "--allow-invalid", "--allow-edited"]
    assert main(["compare", base, head, *lenient, "--min-pass-rate", "100%"]) == 1
    assert "below the minimum 100.0%" in capsys.readouterr().out


@pytest.mark.parametrize(("written", "rate"), [("90%", 0.9), ("0.9", 0.9), ("'90%'", 0.9), ("1", 1.0)])
def test_the_config_gate_reads_rates_with_the_same_parser(tmp_path: Path, written: str, rate: float) -> None:
    cfg = tmp_path / "sqlcanary.yml"
    cfg.write_text(f"gate:\n  min_pass_rate: {written}\n  max_pass_rate_drop: 5%\n")
    gate = find_config(str(cfg), None).gate
    assert gate is not None
    assert gate.min_pass_rate == pytest.approx(rate) and gate.max_pass_rate_drop == pytest.approx(0.05)


def test_a_config_gate_of_90_is_refused_with_the_fix(tmp_path: Path) -> None:
    cfg = tmp_path / "sqlcanary.yml"
    cfg.write_text("gate:\n  min_pass_rate: 90\n")
    with pytest.raises(ConfigError) as caught:
        find_config(str(cfg), None)
    message = str(caught.value)
    assert "min_pass_rate" in message and "90: a rate is 0-1 or a percentage: did you mean 90%?" in message
    assert str(cfg) in message


def test_gate_settings_keep_fractions_and_their_schema_allows_percentages() -> None:
    assert GateSettings(min_pass_rate="90%") == GateSettings(min_pass_rate=0.9)
    assert GateSettings(max_pass_rate_drop=None).max_pass_rate_drop is None
    schema = GateSettings.model_json_schema()["properties"]["min_pass_rate"]
    assert {"type": "number", "minimum": 0, "maximum": 1} in schema["anyOf"]
    assert any(s.get("type") == "string" for s in schema["anyOf"])
