"""A sweep's runs, one per setting: group the legs' RunResults by the setting each recorded (RunMeta.setting,
not the file name), merge each setting's shards with the existing rules (bot.run.merge: a missing or duplicated
shard is refused, naming it), and order the settings as the grid did (the first is the one the others are
compared with)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.base.errors import ConfigError, ResultFileError
from bot.base.results import RunResult, RunSetting
from bot.run.merge import merge_runs

MAX_SETTINGS = 256


@dataclass(frozen=True)
class SettingRun:
    setting: RunSetting
    run: RunResult  # the setting's shards merged (or its one unsharded run)
    files: tuple[str, ...]


def _one_setting(name: str, parts: list[tuple[str, RunResult]]) -> SettingRun:
    settings = {run.meta.setting for _, run in parts}
    if len(settings) > 1:
        raise ResultFileError(
            f"setting {name!r}: its runs record different settings ({', '.join(p for p, _ in parts)})",
            path=parts[0][0],
        )
    setting = parts[0][1].meta.setting
    assert setting is not None
    if len(parts) == 1 and parts[0][1].meta.shard is None:
        run = parts[0][1]
    else:
        try:
            run = merge_runs(parts)
        except ConfigError as exc:  # a missing shard: say which setting
            raise type(exc)(f"setting {name!r}: {exc.message}", path=exc.path) from None
    return SettingRun(setting=setting, run=run, files=tuple(p for p, _ in parts))


def by_setting(runs: list[tuple[str, RunResult]]) -> list[SettingRun]:
    """One SettingRun per setting, in the grid's order (RunSetting.index; then first seen). ResultFileError /
    ConfigError (exit 2) for a run that is no sweep leg's, shards that do not add up, or settings that were
    evaluated on different suites (their table would compare nothing)."""
    if not runs:
        raise ConfigError("no sweep run to report: give the legs' RunResult files")
    groups: dict[str, list[tuple[str, RunResult]]] = {}
    for path, run in runs:
        if run.meta.setting is None:
            raise ResultFileError(
                "not a sweep leg's run (it records no setting; `mode: sweep` with input `setting` writes one)",
                path=path,
            )
        groups.setdefault(run.meta.setting.name, []).append((path, run))
    if len(groups) > MAX_SETTINGS:
        raise ConfigError(f"{len(groups)} settings; a sweep report takes at most {MAX_SETTINGS}")
    out = [_one_setting(name, parts) for name, parts in groups.items()]
    order = {name: i for i, name in enumerate(groups)}
    out.sort(key=lambda s: (s.setting.index is None, s.setting.index or 0, order[s.setting.name]))
    first = out[0]
    for other in out[1:]:
        if other.run.meta.suite_hash != first.run.meta.suite_hash:
            raise ResultFileError(
                f"setting {other.setting.name!r} ran another suite than {first.setting.name!r} "
                f"(suite_hash {other.run.meta.suite_hash} against {first.run.meta.suite_hash})",
                path=other.files[0],
            )
    return out
