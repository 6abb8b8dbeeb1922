"""Which files an agent's code is (a `python:` file's folder or a module's package, the files a `command:` names),
and a stable walk of a folder. Names are relative (to the config file's folder, or the folder walked), so the
same commit checked out in two places gives the same names (bot.run.fingerprint hashes them)."""

from __future__ import annotations

import importlib.util
import os
import shlex
from pathlib import Path

MAX_CODE_FILES = 2000  # *.py files hashed under an agent's folder, at most (in a stable walk order)
# sqlcanary's own output and caches: never an agent's input (a run must not change the next run's fingerprint)
OUTPUT_DIRS = frozenset({"sqlcanary-results", ".sqlcanary"})
_SKIP_DIRS = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".venv",
        "venv",
        "node_modules",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        "dist-packages",
        "build",
        "dist",
    }
)


def relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def python_files(folder: Path, *, limit: int = MAX_CODE_FILES) -> list[tuple[str, Path]]:
    """*.py files under `folder` (relative names, a stable walk), skipping caches and virtualenvs; at most
    `limit` of them, so an agent living at the top of a large tree still hashes quickly."""
    return all_files(folder, limit=limit, suffix=".py")


def python_agent_files(target: str, base_dir: Path) -> list[tuple[str, Path]]:
    module_part = target.rpartition(":")[0]
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part)
        path = path if path.is_absolute() else base_dir / path
        if not path.is_file():
            return []
        return python_files(path.parent)
    try:
        spec = importlib.util.find_spec(module_part)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return []
    origin = Path(spec.origin)
    if "." not in module_part and origin.name != "__init__.py":
        return [(origin.name, origin)]
    top = origin.parent
    for _ in range(module_part.count(".")):
        top = top.parent
    return python_files(top)


def command_files(cmd: str, base_dir: Path) -> list[tuple[str, Path]]:
    try:
        tokens = shlex.split(cmd)
    except ValueError:
        return []
    out: list[tuple[str, Path]] = []
    for token in tokens:
        if token.startswith("-"):
            continue
        path = Path(token) if Path(token).is_absolute() else base_dir / token
        if not path.is_file():
            continue
        out.append((relative(path, base_dir), path))
        out.extend((relative(p, base_dir), p) for p in sorted(path.parent.glob("*.py")) if p.is_file())
    return out


def all_files(folder: Path, *, limit: int, suffix: str = "") -> list[tuple[str, Path]]:
    """Every file under `folder` whose name ends with `suffix` (relative names, a stable walk) but caches,
    virtualenvs and sqlcanary's own output; at most `limit` of them."""
    out: list[tuple[str, Path]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS | OUTPUT_DIRS and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(suffix)):
            p = Path(root) / name
            out.append((relative(p, folder), p))
            if len(out) >= limit:
                return out
    return out


def config_files(base: Path) -> list[tuple[str, Path]]:
    return [(name, base / name) for name in ("sqlcanary.yml", "sqlcanary.yaml") if (base / name).is_file()]
