"""Fingerprints of what produces an answer: the knowledge base, the agent (config + code + KB), one request.

Every path that goes into a hash is relative (to the config file, or to the agent's folder), so the same
commit checked out in two places (the working tree and a base worktree) has the same fingerprints.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bot.cases.model import Case
from bot.config import Config

FINGERPRINT_VERSION = "1"
MAX_CODE_FILES = 2000  # *.py files hashed under an agent's folder, at most (in a stable walk order)
_SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".venv", "venv", "node_modules", ".tox", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", "site-packages", "dist-packages", "build", "dist"})  # fmt: skip
# Agents whose answers are fixed by their spec (and a file): nothing to cache, nothing to ask again.
FIXED_AGENTS = ("gold", "predictions", "run")
# Agents with a cache of their own, keyed by everything they send (the llm agent: model, prompt with KB and schema):
# an answer cache in front of them could only go stale.
SELF_CACHING_AGENTS = ("llm",)


def _short(h: Any) -> str:
    return str(h.hexdigest()[:16])


def _file_digest(path: Path) -> bytes:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def hash_named_files(files: Iterable[tuple[str, Path]], *, salt: str = "") -> str:
    """Hash of (name, content) pairs, in name order; a file that vanished counts as missing."""
    h = hashlib.sha256(f"sqlcanary-fp{FINGERPRINT_VERSION}:{salt}".encode())
    for name, path in sorted(set(files)):
        h.update(name.encode() + b"\0")
        try:
            h.update(_file_digest(path))
        except OSError:
            h.update(b"<missing>")
        h.update(b"\0")
    return _short(h)


def kb_fingerprint(config: Config) -> str:
    """Hash of the files matched by `kb.paths` (globs relative to the config file); "" when none is set."""
    if not config.kb.paths:
        return ""
    base = Path(config.base_dir)
    found: set[tuple[str, Path]] = set()
    for pattern in config.kb.paths:
        matches = (
            base.glob(pattern) if not Path(pattern).is_absolute() else Path("/").glob(pattern.lstrip("/"))
        )
        for p in matches:
            if p.is_file():
                found.add((_relative(p, base), p))
    return hash_named_files(found, salt="kb")


def python_files(folder: Path, *, limit: int = MAX_CODE_FILES) -> list[tuple[str, Path]]:
    """*.py files under `folder` (relative names, a stable walk), skipping caches and virtualenvs; at most
    `limit` of them, so an agent living at the top of a large tree still hashes quickly."""
    out: list[tuple[str, Path]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                p = Path(root) / name
                out.append((_relative(p, folder), p))
                if len(out) >= limit:
                    return out
    return out


def _python_agent_files(target: str, base_dir: Path) -> list[tuple[str, Path]]:
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


def _command_files(cmd: str, base_dir: Path) -> list[tuple[str, Path]]:
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
        out.append((_relative(path, base_dir), path))
        out.extend((_relative(p, base_dir), p) for p in sorted(path.parent.glob("*.py")) if p.is_file())
    return out


def agent_fingerprint(
    spec: str, options: dict[str, Any], base_dir: str | Path, kb_fp: str, *, cwd: str | Path | None = None
) -> str:
    """What decides an agent's answers: its spec and options, its code, and the KB it reads.

    `python:FILE:FN`: the file and every *.py under its folder; `python:MODULE:FN`: the module's package;
    `command:CMD`: the files CMD names (and the *.py beside them); `predictions:` / `run:`: that file;
    `gold`: the spec alone. `cwd` is the folder the run starts in (a predictions file is looked up there
    first, as the agent does)."""
    base = Path(base_dir)
    kind, _, arg = spec.partition(":")
    kind, arg = kind.strip(), arg.strip()
    header = json.dumps({"spec": spec, "options": options}, sort_keys=True, default=str)
    if kind == "gold":
        return hash_named_files([], salt=header)
    if kind in ("predictions", "run"):
        here = Path(cwd or os.getcwd()) / arg
        path = here if here.exists() else base / arg
        return hash_named_files([("predictions", path)], salt=header)
    if kind == "python":
        files = _python_agent_files(arg, base)
    elif kind == "command":
        files = _command_files(arg, base)
    else:  # another kind (`llm[:CONFIG]`): the files its argument names, else the config beside it
        files = _command_files(arg, base) if arg else _config_files(base)
    return hash_named_files(files, salt=f"{header}\0kb:{kb_fp}")


def _config_files(base: Path) -> list[tuple[str, Path]]:
    return [(name, base / name) for name in ("sqlcanary.yml", "sqlcanary.yaml") if (base / name).is_file()]


def uses_answer_cache(spec: str) -> bool:
    """gold / predictions / run agents answer from data already on disk: caching them gains nothing."""
    return spec.partition(":")[0].strip() not in FIXED_AGENTS + SELF_CACHING_AGENTS


def answer_key(agent_fp: str, case: Case, attempt: int) -> str:
    """Content address of one answer: the agent fingerprint, what the agent is told about the case, attempt."""
    payload = {"v": FINGERPRINT_VERSION, "agent": agent_fp, "case": case.agent_payload(), "attempt": attempt}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
