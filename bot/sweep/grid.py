"""A sweep's grid file (YAML): named settings and/or axes, each setting a model, a temperature, an agent spec, a
preset and a repeat count. Validated with pydantic; an error names the file, the line and the key.

    settings:                       # explicit settings
      - {name: small, model: qwen2.5-coder-1.5b}
      - {name: large, model: qwen2.5-coder-7b}
    axes:                           # optional: the cartesian product of the values
      temperature: [0, 0.7]
    repeat: 3                       # optional default for every setting

Only `settings`: those settings. Only `axes`: their product, each combination named from its values
(`gpt-4o-t0.7`). Both: the product of the two, every setting with every combination of the axes, named
`<setting>-<values>` (`small-t0`, `small-t0.7`, `large-t0`, `large-t0.7`), setting-major; a setting may not set a
field an axis varies (which would win is not obvious: the grid is refused, naming the line).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, field_validator

from bot.base.errors import ConfigError
from bot.base.results import FrozenModel, RunSetting
from bot.base.yamlread import LineDict, LineList, load_yaml_file
from bot.config.presets import check_preset

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = "1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit"
AXES = ("model", "temperature", "agent", "preset", "repeat")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def check_name(name: str) -> str:
    """A setting's name: it becomes a folder name (sqlcanary-results/sweep/<name>/) and a table row."""
    if not NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"a setting name is {NAME_RULE}; got {name!r}")
    return name


# A setting's fields, bounded the same in `settings` and in `axes`.
ModelName = Annotated[str, Field(min_length=1, max_length=200)]
Temperature = Annotated[float, Field(ge=0, le=2)]
AgentSpec = Annotated[str, Field(min_length=1, max_length=500)]
Preset = Annotated[str, AfterValidator(check_preset)]  # one the evaluator knows (bot.config.presets)
Repeat = Annotated[int, Field(ge=1, le=50)]


class Setting(FrozenModel):
    """One setting of the grid: what one column of the sweep's table evaluated. Unset fields keep the config's."""

    name: str
    model: ModelName | None = None
    temperature: Temperature | None = None
    agent: AgentSpec | None = None
    preset: Preset | None = None
    repeat: Repeat | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    def record(self, index: int | None = None) -> RunSetting:
        """What a sweep leg writes into its run (RunMeta.setting)."""
        return RunSetting(index=index, **self.model_dump())


class Axes(FrozenModel):
    """Each axis's values (an error names `axes.<field>[i]` and its line)."""

    model: list[ModelName] | None = Field(default=None, min_length=1)
    temperature: list[Temperature] | None = Field(default=None, min_length=1)
    agent: list[AgentSpec] | None = Field(default=None, min_length=1)
    preset: list[Preset] | None = Field(default=None, min_length=1)
    repeat: list[Repeat] | None = Field(default=None, min_length=1)


class GridFile(FrozenModel):
    settings: list[Setting] = Field(default_factory=list)
    axes: Axes | None = None
    repeat: int | None = Field(default=None, ge=1, le=50)


def _value_name(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _UNSAFE.sub("_", str(value)).strip("_.") or "x"


def _combinations(axes: Axes) -> list[tuple[str, dict[str, Any]]]:
    """The cartesian product of the axes, in the file's order: (name from the values, the fields it sets)."""
    given = [(name, getattr(axes, name)) for name in AXES if getattr(axes, name) is not None]
    if not given:
        return []
    out = []
    for combo in itertools.product(*(values for _, values in given)):
        parts = [
            ("t" if name == "temperature" else "r" if name == "repeat" else "") + _value_name(value)
            for (name, _), value in zip(given, combo, strict=True)
        ]
        out.append(("-".join(parts), dict(zip((n for n, _ in given), combo, strict=True))))
    return out


def _short(name: str) -> str:
    return name[:64].strip("-._") or "setting"


def axis_settings(axes: Axes) -> list[Setting]:
    """The cartesian product of the axes, each combination named from its values (`gpt-4o-t0.7`)."""
    return [Setting(name=_short(name), **fields) for name, fields in _combinations(axes)]


def crossed(settings: list[Setting], axes: Axes, *, source: str, data: Any) -> list[Setting]:
    """Every setting with every combination of the axes (setting-major), named `<setting>-<values>`. A setting
    that sets a field an axis varies is refused (ConfigError naming its line)."""
    combos = _combinations(axes)
    if not combos:
        return settings
    varied = [name for name in AXES if getattr(axes, name) is not None]
    out = []
    for i, s in enumerate(settings):
        both = [name for name in varied if getattr(s, name) is not None]
        if both:
            raise ConfigError(
                f"`settings[{i}].{both[0]}`: setting {s.name!r} sets `{both[0]}`, which `axes.{both[0]}` varies; "
                "the grid is the product of settings and axes: drop one of the two",
                path=source,
                line=_line(data, ("settings", i, both[0])),
            )
        for name, fields in combos:
            out.append(Setting(**{**s.model_dump(), "name": _short(f"{s.name}-{name}"), **fields}))
    return out


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc).replace(".[", "[") or "(top)"


def _line(data: Any, loc: tuple[int | str, ...]) -> int | None:
    """The line of the deepest key of `loc` the YAML loader remembered (bot.base.yamlread)."""
    line, node = None, data
    for part in loc:
        in_dict = isinstance(node, LineDict) and isinstance(part, str) and part in node
        in_list = isinstance(node, LineList) and isinstance(part, int) and part < len(node)
        if not (in_dict or in_list):
            break
        line, node = node.line_of(part), node[part]
    return line


def parse_grid(data: Any, *, source: str) -> list[Setting]:
    """The grid's settings: the explicit ones, the axes' product, or (both given) every setting crossed with the
    axes' product; the file-wide `repeat` fills in a setting's own. ConfigError (exit 2) names `source`, the line
    and the key."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("a grid is a mapping with `settings` and/or `axes`", path=source)
    try:
        grid = GridFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise ConfigError(f"`{_location(loc)}`: {msg}", path=source, line=_line(data, loc)) from None
    settings = list(grid.settings)
    if grid.axes is not None:
        settings = (
            crossed(settings, grid.axes, source=source, data=data) if settings else axis_settings(grid.axes)
        )
    if not settings:
        raise ConfigError("no setting: give `settings` or `axes`", path=source)
    if grid.repeat is not None:
        settings = [
            s if s.repeat is not None else s.model_copy(update={"repeat": grid.repeat}) for s in settings
        ]
    seen: dict[str, int] = {}
    for i, s in enumerate(settings):
        if s.name in seen:
            raise ConfigError(
                f"setting name {s.name!r} is used twice (settings {seen[s.name] + 1} and {i + 1}); "
                "names must be unique",
                path=source,
            )
        seen[s.name] = i
    return settings


def load_grid(path: str | Path) -> list[Setting]:
    """Read and validate a grid file."""
    data = load_yaml_file(Path(path))
    return parse_grid(data, source=str(path))
