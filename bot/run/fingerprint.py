"""Fingerprints of what produces an answer: the knowledge base, the agent (config + code + KB), one request.

Every path that goes into a hash is relative (to the config file, to the agent's folder, or to the repository
root), so the same commit checked out in two places (the working tree and a base worktree) has the same
fingerprints. `agent.inputs` may narrow an agent's fingerprint for trusted runs only: a check's head (the pull
request's agent, `AgentInputs.whole_tree`) is fingerprinted by its whole tree and the resolved config.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.git import repo_root, tree_contents
from bot.cases.model import Case
from bot.config.model import Config
from bot.run.agent_files import (
    OUTPUT_DIRS,
    all_files,
    command_files,
    config_files,
    python_agent_files,
    relative,
)

FINGERPRINT_VERSION = "1"
MAX_TREE_FILES = 20000  # outside git: files hashed under the config folder before the answer cache gives up
# Agents whose answers are fixed by their spec (and a file): nothing to cache, nothing to ask again.
FIXED_AGENTS = ("gold", "predictions", "run")
# Agents with a cache of their own, keyed by everything they send (the llm agent: model, prompt with KB and schema):
# an answer cache in front of them could only go stale.
SELF_CACHING_AGENTS = ("llm",)


def _short(h: Any) -> str:
    return str(h.hexdigest()[:16])


def file_digest(path: Path) -> bytes:
    """The SHA-256 of a file's content, read a MiB at a time."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


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
                found.add((relative(p, base), p))
    return hash_named_files(found, salt="kb")


@dataclass(frozen=True)
class AgentInputs:
    """What an agent's answers may depend on besides its spec and options (config `agent: {inputs, env}`).

    `globs` None is the sound default: every file of the repository the agent lives in (tracked files as they are
    in the working tree, plus untracked ones in the agent's folder), except the suite's case files (what the agent
    is told about a case is in each answer's key). Globs (relative to the config file) narrow it to those files
    and the files the spec names. `env` names the environment variables whose values count too."""

    globs: tuple[str, ...] | None = None
    env: tuple[str, ...] = ()
    # The head of a check (`sqlcanary run --side head`): its agent is the pull request's, so `globs` never narrow
    # what counts; every file of its repository does (tracked, and untracked unless ignored), case files too.
    whole_tree: bool = False


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
    config_fp: str = "",
    outputs: Iterable[Path] = (),
) -> str | None:
    """What decides an agent's answers: its spec and options, what it reads (`inputs`), the KB, the environment
    variables `inputs.env` names. None when that cannot be known cheaply (a folder outside git holding more than
    MAX_TREE_FILES files): its answers are then never cached.

    `inputs.whole_tree` (a check's head): every file of the repository counts, `exclude` does not apply, and
    `config_fp` (config_digest of the resolved config) is hashed too; `outputs` are the folders this run
    writes (the cache, the run's own output), whose untracked files never count.

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
        code = python_agent_files(arg, base)
    elif kind == "command":
        code = command_files(arg, base)
    else:  # another kind (`llm[:CONFIG]`): the files its argument names, else the config beside it
        code = command_files(arg, base) if arg else config_files(base)
    env = environ or {}  # Settings.environ: only the names `inputs.env` lists are looked at
    values = {
        name: hashlib.sha256(env[name].encode()).hexdigest() if name in env else None for name in inputs.env
    }
    salt = f"{header}\0kb:{kb_fp}\0env:{json.dumps(values, sort_keys=True)}"
    if inputs.whole_tree:
        entries = whole_tree_entries(base, tuple(outputs))
        if entries is None:  # outside git: the config folder, as below
            entries = _tree_entries(base, [], set())
        if entries is None:
            return None
        files = [*entries, *((name, _file_id(p)) for name, p in code)]
        return _hash_entries(files, salt=f"whole-tree\0{salt}\0config:{config_fp}")
    if inputs.globs is not None:
        return hash_named_files([*code, *_globbed(base, inputs.globs)], salt=salt)
    tree = _tree_entries(base, [p for _, p in code], {p.resolve() for p in exclude})
    if tree is None:
        return None
    return _hash_entries([*tree, *((name, _file_id(p)) for name, p in code)], salt=f"tree\0{salt}")


def _globbed(base: Path, patterns: tuple[str, ...]) -> list[tuple[str, Path]]:
    return [(relative(p, base), p) for pattern in patterns for p in base.glob(pattern) if p.is_file()]


def _file_id(path: Path) -> str:
    try:
        return file_digest(path).hex()
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
    skipped = {relative(p, repo) for p in exclude}
    return [
        (name, content_id)
        for name, content_id in tree_contents(repo, untracked_in=folders).items()
        if name not in skipped and not OUTPUT_DIRS.intersection(name.split("/"))
    ]


def whole_tree_entries(base: Path, outputs: tuple[Path, ...] = ()) -> list[tuple[str, str]] | None:
    """(name, content id) of every file of the repository holding `base` (None outside one): tracked files as they
    are in the working tree wherever they are, and the untracked, unignored ones except under sqlcanary's output
    folders (`outputs`, and the default ones anywhere), which a run writes and no answer depends on."""
    repo = repo_root(base)
    if repo is None:
        return None
    skipped = []
    for folder in outputs:
        rel = relative(folder, repo)
        if rel not in ("", ".") and not Path(rel).is_absolute():
            skipped.append(rel)
    contents = tree_contents(
        repo, untracked_in=(repo,), skip_untracked=tuple(skipped), skip_untracked_names=tuple(OUTPUT_DIRS)
    )
    return sorted(contents.items())


def config_digest(config: Config) -> str:
    """Hash of a resolved config (what the head of a check is evaluated with), without the paths of this
    checkout (its folder and file; an absolute suite path is made relative to the folder) or the DSN."""
    data = config.model_dump(mode="json", exclude={"base_dir", "config_file", "dsn"})
    if config.suite and Path(config.suite).is_absolute():  # a suite the head moved (bot.check.trees)
        data["suite"] = Path(os.path.relpath(config.suite, config.base_dir)).as_posix()
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def uses_answer_cache(spec: str) -> bool:
    """gold / predictions / run agents answer from data already on disk: caching them gains nothing."""
    return spec.partition(":")[0].strip() not in FIXED_AGENTS + SELF_CACHING_AGENTS


def answer_key(agent_fp: str, case: Case, attempt: int) -> str:
    """Content address of one answer: the agent fingerprint, what the agent is told about the case, attempt."""
    payload = {"v": FINGERPRINT_VERSION, "agent": agent_fp, "case": case.agent_payload(), "attempt": attempt}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
