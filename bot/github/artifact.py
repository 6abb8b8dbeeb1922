"""Reading a downloaded artifact folder (`mode: post`, input `artifacts`) as untrusted data.

Whoever ran the pull request's workflow wrote these files: a fork's workflow is the fork's own. Nothing here is
executed, imported or followed: the folder is walked without following links, and a symlink, a special file, a
file over the size limit, a folder over the total limit, a file named outside its leg's folder, JSON that is not
the schema and version this sqlcanary writes: each is a `ResultFileError` (exit 2) naming the file and the reason,
raised before anything is posted. The texts inside (case ids, questions, SQL, reasons) are data for the report
templates, which escape them.

Layout: the folder is one leg (it holds `github-payload.json`), or holds one subfolder per leg (what
actions/download-artifact writes for several artifacts: `DIR/<artifact name>/`); subfolders without a payload are
not legs and are ignored (other artifacts of the same run)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.base.results import SCHEMA_VERSION, RunResult
from bot.base.untrusted import (
    FolderLimits,
    M,
    folder_root,
    inside,
    read_json_object,
    refused,
    validated,
    walk_files,
)
from bot.compare.comparison import COMPARISON_SCHEMA_VERSION, Comparison
from bot.github.leg_payload import PAYLOAD_FILE, PAYLOAD_KIND, PAYLOAD_SCHEMA_VERSION, LegPayload


@dataclass(frozen=True)
class ArtifactLimits(FolderLimits):
    legs: int = 256  # GitHub's limit of jobs in one matrix


@dataclass(frozen=True)
class Leg:
    """One uploading job's results: its payload and the runs it names, validated."""

    name: str  # the leg folder, relative to the artifact folder ("." for the folder itself)
    payload: LegPayload
    head: RunResult
    base: RunResult | None
    comparison: Comparison

    def where(self, file: str) -> str:
        """A file of this leg as error messages name it (relative to the artifact folder)."""
        return file if self.name == "." else f"{self.name}/{file}"


def leg_folders(path: Path, limits: ArtifactLimits = ArtifactLimits()) -> list[tuple[str, Path]]:
    """The legs of the artifact folder `path`, each as (its name relative to the folder, "." for the folder
    itself; the folder resolved), after checking all of it (see the module's text); [] when none."""
    root = folder_root(path)
    walk_files(root, limits)
    if (root / PAYLOAD_FILE).is_file():
        return [(".", root)]
    legs = sorted(p for p in root.iterdir() if p.is_dir() and (p / PAYLOAD_FILE).is_file())
    if len(legs) > limits.legs:
        raise refused(".", f"{len(legs)} legs, over the {limits.legs} allowed")
    named = []
    for folder in legs:
        name = str(folder.relative_to(root))
        if not folder.resolve().is_relative_to(root):
            raise refused(name, "a folder outside the artifact folder")
        named.append((name, folder.resolve()))
    return named


def read_leg(name: str, folder: Path, limits: ArtifactLimits = ArtifactLimits()) -> Leg:
    """One leg's payload and the files it names, each checked (see the module's text)."""

    def where(file: str) -> str:
        return file if name == "." else f"{name}/{file}"

    raw = read_json_object(folder / PAYLOAD_FILE, where(PAYLOAD_FILE), limits.file_bytes)
    if raw.get("kind") != PAYLOAD_KIND:
        raise refused(where(PAYLOAD_FILE), f"kind {raw.get('kind')!r} is not {PAYLOAD_KIND!r}")
    payload = validated(LegPayload, raw, where(PAYLOAD_FILE), PAYLOAD_SCHEMA_VERSION)

    def load(kind: type[M], file: str, version: int) -> M:
        path = inside(folder, file, where(PAYLOAD_FILE))
        return validated(kind, read_json_object(path, where(file), limits.file_bytes), where(file), version)

    files = payload.files
    head = load(RunResult, files.head, SCHEMA_VERSION)
    base = load(RunResult, files.base, SCHEMA_VERSION) if files.base else None
    comparison = load(Comparison, files.comparison, COMPARISON_SCHEMA_VERSION)
    if head.meta.shard != payload.shard:
        raise refused(where(files.head), f"shard {head.meta.shard!r}, the payload says {payload.shard!r}")
    if base is not None and base.meta.shard != payload.shard:
        raise refused(
            where(files.base or ""), f"shard {base.meta.shard!r}, the payload says {payload.shard!r}"
        )
    return Leg(name=name, payload=payload, head=head, base=base, comparison=comparison)


def read_artifacts(path: Path, limits: ArtifactLimits = ArtifactLimits()) -> list[Leg]:
    """Every leg under the artifact folder `path` (input `artifacts`), validated; [] when it holds none."""
    return [read_leg(name, folder, limits) for name, folder in leg_folders(path, limits)]
