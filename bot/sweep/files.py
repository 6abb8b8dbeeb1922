"""Reading a sweep's runs from a folder of downloaded artifacts, which is untrusted data (a matrix job uploaded it,
and a matrix job runs the code under test): the whole folder is checked first (bot.base.untrusted: no symlink
anywhere, no special file, each file and the total size-capped), then `**/sweep/**/*.json` below it is read, each
opened without following a link and validated as a RunResult (schema version, pydantic). Nothing in it is run."""

from __future__ import annotations

from pathlib import Path

from bot.base.errors import ConfigError
from bot.base.results import SCHEMA_VERSION, RunResult, read_run
from bot.base.untrusted import FolderLimits, folder_root, read_json_object, refused, validated, walk_files

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
    """The runs the command line names: the user's own files (validated as any RunResult is)."""
    return [(p, read_run(p)) for p in paths]
