"""The knowledge base a config names (`kb.paths`), checked without a database: a glob that matches nothing, a glob
that matches files the repair loop can never edit, YAML that does not parse, and - in a folder laid out as
bot.kb's structured KB (tables.yaml, dimensions.yaml, metrics/) - every problem its validator finds."""

from __future__ import annotations

from pathlib import Path

from bot.base.errors import SqlcanaryError
from bot.base.yamlread import LineDict, LineList, load_yaml_file
from bot.config.model import Config, check_kb_paths
from bot.config.problems import Problem
from bot.kb import validate_kb
from bot.kb.read import DIMENSIONS_FILE, TABLES_FILE

STRUCTURED_MARKS = (TABLES_FILE, DIMENSIONS_FILE, "metrics")


def glob_lines(config_file: str | None, count: int) -> list[int | None]:
    """The line of each `kb.paths` glob in the config file (None where it cannot be told)."""
    try:
        doc = load_yaml_file(config_file) if config_file else None
    except SqlcanaryError:
        doc = None
    kb = doc.get("kb") if isinstance(doc, dict) else None
    paths = kb.get("paths") if isinstance(kb, dict) else None
    if isinstance(paths, LineList):
        return [paths.line_of(i) for i in range(count)]
    line = kb.line_of("paths") if isinstance(kb, LineDict) else None
    return [line] * count


def _matches(base: Path, glob: str) -> list[Path]:
    found = set(base.glob(glob)) | (set(base.glob(glob + "/*")) if glob.endswith("**") else set())
    return sorted(p for p in found if p.is_file())


def _folder(glob: str) -> str:
    """The literal folders a glob starts with: `kb/**/*.yaml` -> `kb`."""
    parts = []
    for part in glob.split("/")[:-1]:
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    return "/".join(parts)


def kb_problems(config: Config) -> tuple[list[Problem], int]:
    """Every problem of the config's KB, and how many KB files its globs match."""
    base = Path(config.base_dir)
    where = config.config_file or str(base)
    globs = config.kb.paths
    lines = glob_lines(config.config_file, len(globs))
    out: list[Problem] = []
    files: set[Path] = set()
    for i, glob in enumerate(globs):
        if not glob or Path(glob).is_absolute() or ".." in glob.split("/"):
            continue  # the repair loop refuses these itself
        folder = _folder(glob)
        if folder and not (base / folder).is_dir():
            message = (
                f"the glob {glob!r} names the folder {folder}/, which does not exist (relative to {base})"
            )
            out.append(Problem(where, lines[i], f"kb.paths[{i}]", message, severity="warning"))
        files.update(_matches(base, glob))
    if globs and not files:
        message = f"no file matches these globs (relative to {base}): the agent and `repair` see no KB"
        out.append(Problem(where, lines[0] if lines else None, "kb.paths", message, severity="warning"))
    try:
        check_kb_paths(config, lines=tuple(lines))
    except SqlcanaryError as exc:
        out.append(Problem(exc.path or where, exc.line, "kb.paths", exc.message))
    structured = sorted(
        {_folder(g) for g in globs if any((base / _folder(g) / m).exists() for m in STRUCTURED_MARKS)}
    )
    for folder in structured:
        for kp in validate_kb(base / folder, prefix=folder):
            out.append(Problem(str(base / kp.path), kp.line, "", kp.message, severity=kp.severity))
    for f in sorted(files):
        if f.suffix in (".yaml", ".yml") and not any(_under(f, base / d) for d in structured):
            try:
                load_yaml_file(f)
            except SqlcanaryError as exc:
                out.append(Problem(str(f), exc.line, "", exc.message))
    return out, len(files)


def _under(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True
