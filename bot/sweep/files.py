"""Reading a sweep's runs. From a folder of downloaded artifacts, which is untrusted data (a matrix job uploaded it,
and a matrix job runs the code under test): the whole folder is checked first (bot.base.untrusted: no symlink
anywhere, no special file, each file and the total size-capped), then `**/sweep/**/*.json` below it is read, each
opened without following a link and validated as a RunResult (schema version, pydantic). Nothing in it is run.
From the command line (`sweep report`): files, folders `sweep run` wrote (read the same way) and `NAME=PATH`, with
a setting named for the runs that record none (plain `sqlcanary run` output, sharded or not)."""

from __future__ import annotations

from pathlib import Path

from bot.base.errors import ConfigError
from bot.base.results import SCHEMA_VERSION, RunResult, RunSetting, read_run
from bot.base.untrusted import FolderLimits, folder_root, read_json_object, refused, validated, walk_files
from bot.sweep.grid import check_name

LIMITS = FolderLimits(file_bytes=64 * 1024 * 1024, total_bytes=4 * 1024 * 1024 * 1024, entries=10_000)
MAX_FILES = 4096  # 256 matrix jobs, a few files each
SWEEP_DIR = "sweep"


def find_runs(folder: str | Path, limits: FolderLimits | None = None) -> list[Path]:
    """The sweep runs below `folder` (`**/sweep/**/*.json`), sorted, after checking all of the folder;
    exit 2 for a missing folder, a symlink, a special file, sizes over the limits or too many runs."""
    limits = limits or LIMITS
    root = folder_root(Path(folder))
    found = [
        p
        for p in walk_files(root, limits)
        if SWEEP_DIR in p.relative_to(root).parts[:-1] and p.suffix == ".json" and not p.name.startswith(".")
    ]
    if len(found) > MAX_FILES:
        raise ConfigError(f"input `artifacts`: more than {MAX_FILES} sweep runs under {folder}")
    return found


def read_untrusted_run(path: Path, root: Path, limits: FolderLimits | None = None) -> RunResult:
    """One run file of the artifact folder `root`, validated as a RunResult of this schema version."""
    root = root.resolve()
    shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    if not path.resolve().is_relative_to(root):
        raise refused(shown, "outside the artifact folder")
    data = read_json_object(path, shown, (limits or LIMITS).file_bytes)
    return validated(RunResult, data, shown, SCHEMA_VERSION)


def read_artifact_runs(folder: str | Path) -> list[tuple[str, RunResult]]:
    """Every sweep run under the artifact folder, as (path relative to it, run)."""
    paths = find_runs(folder)
    root = Path(folder).resolve()
    if not paths:
        raise ConfigError(f"input `artifacts`: no sweep run (`**/{SWEEP_DIR}/**/*.json`) under {folder}")
    return [(str(p.relative_to(root)), read_untrusted_run(p, root)) for p in paths]


def read_run_files(paths: list[str]) -> list[tuple[str, RunResult]]:
    """What `sweep report` is given, read as the user's own files: a RunResult file, a folder `sweep run` wrote
    (its `**/sweep/**/*.json`, read as the Action's `sweep-report` reads its artifacts), or `NAME=PATH` (the runs
    of that file or folder are the setting NAME). A run that records no setting (`sqlcanary run`'s, with or
    without `--shard`) is named after its folder when it is a shard and after its file otherwise:
    `runs/small/1.json` of `run --shard 1/2` and `small.json` of a whole run are both setting `small`."""
    out: list[tuple[str, RunResult]] = []
    for arg in paths:
        name, path = _named(arg)
        found = _folder_runs(path, named=name is not None) if path.is_dir() else [(str(path), read_run(path))]
        out += [(shown, _with_name(shown, run, name)) for shown, run in found]
    return out


def _named(arg: str) -> tuple[str | None, Path]:
    """`NAME=PATH` (when no file is called that) or a plain path."""
    name, sep, rest = arg.partition("=")
    if not sep or Path(arg).exists():
        return None, Path(arg)
    try:
        return check_name(name), Path(rest)
    except ValueError as exc:
        raise ConfigError(f"{arg}: NAME=PATH: {exc}") from None


def _folder_runs(folder: Path, *, named: bool) -> list[tuple[str, RunResult]]:
    """A named folder: its `*.json`, each a run of the setting. Otherwise the legs `sweep run` wrote under it."""
    if named:
        paths = sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))
        if not paths:
            raise ConfigError("no RunResult (*.json) in this folder", path=str(folder))
        return [(str(p), read_run(p)) for p in paths]
    root = folder.resolve()
    paths = find_runs(folder)
    if not paths:
        raise ConfigError(
            f"no sweep leg (`**/{SWEEP_DIR}/**/*.json`, what `sweep run` writes) under this folder; for a folder "
            "of `sqlcanary run --shard` files, name their setting: NAME=FOLDER",
            path=str(folder),
        )
    return [(str(folder / p.relative_to(root)), read_untrusted_run(p, root)) for p in paths]


def _with_name(shown: str, run: RunResult, name: str | None) -> RunResult:
    """The run with its setting: NAME= wins; a run that records one keeps it; else named after its file."""
    setting = run.meta.setting
    if name is None and setting is not None:
        return run
    if name is None:
        path = Path(shown)
        name = path.parent.resolve().name if run.meta.shard else path.stem
        try:
            check_name(name)
        except ValueError as exc:
            raise ConfigError(
                f"records no sweep setting, and its name from the file is not one ({exc}): give NAME={shown}",
                path=shown,
            ) from None
    named = setting.model_copy(update={"name": name}) if setting else RunSetting(name=name)
    return run.model_copy(update={"meta": run.meta.model_copy(update={"setting": named})})
