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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.git import repo_root, tree_contents
from bot.cases.model import Case
from bot.config.model import Config

FINGERPRINT_VERSION = "1"
MAX_CODE_FILES = 2000  # *.py files hashed under an agent's folder, at most (in a stable walk order)
MAX_TREE_FILES = 20000  # outside git: files hashed under the config folder before the answer cache gives up
# sqlcanary's own output and caches: never an agent's input (a run must not change the next run's fingerprint)
_OUTPUT_DIRS = frozenset({"sqlcanary-results", ".sqlcanary"})
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
    return _hash_entries(((name, _file_id(path)) for name, path in files), salt=salt)


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
    return all_files(folder, limit=limit, suffix=".py")


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


@dataclass(frozen=True)
class AgentInputs:
    """What an agent's answers may depend on besides its spec and options (config `agent: {inputs, env}`).

    `globs` None is the sound default: every file of the repository the agent lives in (tracked files as they are
    in the working tree, plus untracked ones in the agent's folder), except the suite's case files (what the agent
    is told about a case is in each answer's key). Globs (relative to the config file) narrow it to those files
    and the files the spec names. `env` names the environment variables whose values count too."""

    globs: tuple[str, ...] | None = None
    env: tuple[str, ...] = ()


def agent_fingerprint(
    spec: str,
    options: dict[str, Any],
    base_dir: str | Path,
    kb_fp: str,
    *,
    cwd: str | Path | None = None,
    inputs: AgentInputs = AgentInputs(),
    environ: Mapping[str, str] | None = None,
    exclude: Iterable[Path] = (),
) -> str | None:
    """What decides an agent's answers: its spec and options, what it reads (`inputs`), the KB, the environment
    variables `inputs.env` names. None when that cannot be known cheaply (a folder outside git holding more than
    MAX_TREE_FILES files): its answers are then never cached.

    `python:FILE:FN` / `python:MODULE:FN` and `command:CMD` also hash their code (the file and the *.py under its
    folder, the module's package, the files CMD names), wherever it lives; `predictions:` / `run:`: that file;
    `gold`: the spec alone. `cwd` is the folder the run starts in (a predictions file is looked up there first,
    as the agent does). `exclude`: files that never count (the suite's case files)."""
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
        code = _python_agent_files(arg, base)
    elif kind == "command":
        code = _command_files(arg, base)
    else:  # another kind (`llm[:CONFIG]`): the files its argument names, else the config beside it
        code = _command_files(arg, base) if arg else _config_files(base)
    env = environ or {}  # Settings.environ: only the names `inputs.env` lists are looked at
    values = {
        name: hashlib.sha256(env[name].encode()).hexdigest() if name in env else None for name in inputs.env
    }
    salt = f"{header}\0kb:{kb_fp}\0env:{json.dumps(values, sort_keys=True)}"
    if inputs.globs is not None:
        return hash_named_files([*code, *_globbed(base, inputs.globs)], salt=salt)
    tree = _tree_entries(base, [p for _, p in code], {p.resolve() for p in exclude})
    if tree is None:
        return None
    return _hash_entries([*tree, *((name, _file_id(p)) for name, p in code)], salt=f"tree\0{salt}")


def _globbed(base: Path, patterns: tuple[str, ...]) -> list[tuple[str, Path]]:
    return [(_relative(p, base), p) for pattern in patterns for p in base.glob(pattern) if p.is_file()]


def _file_id(path: Path) -> str:
    try:
        return _file_digest(path).hex()
    except OSError:
        return "<missing>"


def _hash_entries(entries: Iterable[tuple[str, str]], *, salt: str) -> str:
    h = hashlib.sha256(f"sqlcanary-fp{FINGERPRINT_VERSION}:{salt}".encode())
    for name, content_id in sorted(set(entries)):
        h.update(f"{name}\0{content_id}\0".encode())
    return _short(h)


def _tree_entries(base: Path, code: list[Path], exclude: set[Path]) -> list[tuple[str, str]] | None:
    """(name, content id) of every file the agent could read: the repository's, or the config folder's outside
    git (None when that folder is too large to hash on every run)."""
    repo = repo_root(base)
    if repo is None:
        files = all_files(base, limit=MAX_TREE_FILES + 1)
        if len(files) > MAX_TREE_FILES:
            return None
        return [(name, _file_id(p)) for name, p in files if p.resolve() not in exclude]
    folders = tuple(dict.fromkeys([base.resolve(), *(p.resolve().parent for p in code)]))
    skipped = {_relative(p, repo) for p in exclude}
    return [
        (name, content_id)
        for name, content_id in tree_contents(repo, untracked_in=folders).items()
        if name not in skipped and not _OUTPUT_DIRS.intersection(name.split("/"))
    ]


def all_files(folder: Path, *, limit: int, suffix: str = "") -> list[tuple[str, Path]]:
    """Every file under `folder` whose name ends with `suffix` (relative names, a stable walk) but caches,
    virtualenvs and sqlcanary's own output; at most `limit` of them."""
    out: list[tuple[str, Path]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS | _OUTPUT_DIRS and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(suffix)):
            p = Path(root) / name
            out.append((_relative(p, folder), p))
            if len(out) >= limit:
                return out
    return out


def _config_files(base: Path) -> list[tuple[str, Path]]:
    return [(name, base / name) for name in ("sqlcanary.yml", "sqlcanary.yaml") if (base / name).is_file()]


def uses_answer_cache(spec: str) -> bool:
    """gold / predictions / run agents answer from data already on disk: caching them gains nothing."""
    return spec.partition(":")[0].strip() not in FIXED_AGENTS + SELF_CACHING_AGENTS


def answer_key(agent_fp: str, case: Case, attempt: int) -> str:
    """Content address of one answer: the agent fingerprint, what the agent is told about the case, attempt."""
    payload = {"v": FINGERPRINT_VERSION, "agent": agent_fp, "case": case.agent_payload(), "attempt": attempt}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
