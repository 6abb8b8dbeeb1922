"""Runs cases on a private copy of the head's tree whose KB files have some of the pull request's changes reverted.

The copy (the head tree's files, without `.git`, caches or sqlcanary's output) is made once; for each ask every
changed KB file is written as the configuration wants it (bot.attribution.hunks.ChangeSet.texts), so an ask never
depends on the one before, and the user's files are never touched. The agent is the head run's (the config
bot.config.trusted decided; bot.attribution.head_agent), with its paths moved into the copy, started for each ask
as `sqlcanary run` starts it: sandboxed when it runs the pull request's code and sqlcanary is root
(bot.run.sandboxed), with only the allow-listed environment, its answers masked. Answers go through the answer
cache keyed by the agent and KB fingerprints of the copy, so a configuration asked before (in this check or an
earlier one) costs no call. The agent is the pull request's: `agent.inputs` never narrows that key, which covers
every file of the copy (the KB's through the KB fingerprint, as each ask writes them), as `sqlcanary run --side
head` does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.agents import AgentContext
from bot.agents.env import agent_environment
from bot.attribution.delta import Status
from bot.attribution.head_agent import AgentLike, AgentSetup
from bot.attribution.hunks import ChangeSet, kb_relative
from bot.base.errors import ConfigError
from bot.base.secrets import scrub
from bot.base.settings import Settings
from bot.cases.model import Suite
from bot.config.model import Config
from bot.config.trusted import write_resolved
from bot.db.provision import Server
from bot.kb.files import KBFiles, write_bytes_atomic
from bot.run.cache import AnswerCache
from bot.run.fingerprint import (
    MAX_TREE_FILES,
    agent_fingerprint,
    file_digest,
    kb_fingerprint,
    uses_answer_cache,
)
from bot.run.runner import RunOptions, run_suite
from bot.run.sandboxed import SandboxedAgent, start_agent
from bot.run.setup import default_run_options

# Never copied: git's data, sqlcanary's output and caches, Python's byte code.
_NOT_COPIED = frozenset({".git", ".sqlcanary", "sqlcanary-results", "__pycache__"})


class TreeEvaluator:
    """bot.attribution.delta.Evaluator on a copy of the head's tree. Use as a context manager (the copy is
    removed on the way out)."""

    def __init__(
        self,
        *,
        root: Path,
        changes: ChangeSet,
        config: Config,
        suite: Suite,
        server: Server,
        settings: Settings,
        agent: AgentLike | None = None,
        run_options: RunOptions | None = None,
    ) -> None:
        self.root = root.resolve()
        self.changes = changes
        self.suite = suite
        self.server = server
        self.settings = settings
        self._config = config
        self._agent: AgentLike = agent or AgentSetup.from_config(config)
        self._opts = run_options or default_run_options(config)
        self._holder: Path | None = None
        self.agent_calls = 0
        self.cache_hits = 0
        self.runs = 0
        self._copy_digest: str | None = None
        self.isolation: str | None = None  # the last ask's sandbox ("uid 61234"), None when none was needed

    # -- the copy ------------------------------------------------------------------------------------------
    def __enter__(self) -> TreeEvaluator:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        holder = Path(tempfile.mkdtemp(prefix="sqlcanary-revert-"))
        self._holder = holder
        holder.chmod(0o755)  # a sandboxed agent (another user) must reach the copy
        skip = {p.resolve() for p in (self.settings.cache_dir,) if p.resolve().is_relative_to(self.root)}

        def ignore(folder: str, names: list[str]) -> set[str]:
            return {n for n in names if n in _NOT_COPIED or (Path(folder) / n).resolve() in skip}

        try:
            shutil.copytree(self.root, self.tree, symlinks=True, ignore=ignore)
            self.config = self._moved_config(self._config)
            self.agent = self._moved_agent(self._agent)
            self.kb = KBFiles(root=Path(self.config.base_dir), globs=tuple(self.config.kb.paths))
            self._copy_digest = self._digest()
        except BaseException:
            self.close()
            raise

    def _digest(self) -> str | None:
        """Every file of the copy but its KB files (which each ask writes), by content, a link by its target
        (never followed); None when there are more than MAX_TREE_FILES (the answers are then not cached)."""
        folder = Path(self.config.base_dir).resolve()
        h = hashlib.sha256(b"sqlcanary-revert-copy")
        count = 0
        for root, dirs, files in os.walk(self.tree):
            dirs.sort()
            for name in sorted(files):
                path = Path(root) / name
                if self._is_kb(path, folder):
                    continue
                count += 1
                if count > MAX_TREE_FILES:
                    return None
                try:
                    digest = os.readlink(path).encode() if path.is_symlink() else file_digest(path)
                except OSError:
                    digest = b"<unreadable>"
                h.update(f"{path.relative_to(self.tree).as_posix()}\0{digest.hex()}\0".encode())
        return h.hexdigest()[:16]

    def _is_kb(self, path: Path, folder: Path) -> bool:
        """A KB file of the copy (bot.attribution.hunks.kb_relative's rule, with the copy's one KBFiles)."""
        if not self.config.kb.paths:
            return False
        try:
            rel = path.resolve().relative_to(folder).as_posix()
        except ValueError:
            return False
        return self.kb.allowed(rel) is None

    @property
    def tree(self) -> Path:
        if self._holder is None:
            raise RuntimeError("the evaluator is not open")
        return self._holder / "tree"

    def close(self) -> None:
        if self._holder is not None:
            shutil.rmtree(self._holder, ignore_errors=True)
            self._holder = None

    def moved(self, path: str) -> str:
        """An absolute path inside the head's tree as the same path in the copy; anything else as it is."""
        p = Path(path)
        if not p.is_absolute():
            return path
        try:
            return str(self.tree / p.resolve().relative_to(self.root))
        except ValueError:
            return path

    def _moved_config(self, config: Config) -> Config:
        base = Path(config.base_dir).resolve()
        if not base.is_relative_to(self.root):
            raise ConfigError(f"the config's folder {base} is not inside the head's tree {self.root}")
        update: dict[str, Any] = {"base_dir": self.moved(str(base))}
        if config.config_file:
            update["config_file"] = self.moved(config.config_file)
        if config.suite:
            update["suite"] = self.moved(config.suite)
        return config.model_copy(update=update)

    def _moved_agent(self, agent: AgentLike) -> AgentSetup:
        options = {k: self.moved(v) if isinstance(v, str) else v for k, v in agent.options.items()}
        if agent.spec.partition(":")[0].strip() == "llm":  # it reads `llm:` and `kb.paths` from this file
            assert self._holder is not None
            private = Path(tempfile.mkdtemp(prefix="config-", dir=self._holder))  # 0700: this user's alone
            options["config"] = str(write_resolved(self.config, private / "head.json"))
        base = Path(agent.base_dir)
        base = base if base.is_absolute() else Path(self._config.base_dir) / base
        return AgentSetup(
            spec=agent.spec,
            options=options,
            base_dir=self.moved(str(base.resolve())),
            timeout_s=agent.timeout_s,
            inputs=agent.inputs,
            remote=agent.remote,
        )

    # -- asking ----------------------------------------------------------------------------------------------
    def write(self, texts: Mapping[str, str | None]) -> None:
        """Set each KB file of the copy ({repository path: text, None: absent}); only KB files may be written."""
        for path, text in texts.items():
            rel = kb_relative(path, self.config, self.tree)
            if rel is None:
                raise ConfigError(f"{path} is not a KB file of the config's kb.paths: not written")
            target = self.kb.resolve(rel)
            if text is None:
                target.unlink(missing_ok=True)
            elif not target.is_file() or target.read_text(encoding="utf-8") != text:
                write_bytes_atomic(target, text.encode("utf-8"), mode=0o644)

    def evaluate(self, reverted: frozenset[int], ids: Sequence[str]) -> dict[str, Status]:
        self.write(self.changes.texts(reverted))
        cases = [self.suite.case(i) for i in ids]
        agent = self._start()
        result = run_suite(self.suite, cases, agent, self.server, self._options())
        self.runs += 1
        self.agent_calls += result.meta.agent_calls
        self.cache_hits += result.meta.cache_hits
        secrets = self.settings.secrets
        return {
            c.id: Status(c.status, scrub(c.reason, secrets) if secrets else c.reason) for c in result.cases
        }

    def _start(self):
        a = self.agent
        env = agent_environment(self.settings.environ, allow=a.inputs.env)
        ctx = AgentContext(
            base_dir=a.base_dir,
            options=dict(a.options),
            timeout_s=a.timeout_s,
            env=env,
            secrets=self.settings.secrets,
            settings=self.settings,
            suite=self.suite,
        )
        agent = start_agent(a.spec, ctx)
        self.isolation = agent.isolation if isinstance(agent, SandboxedAgent) else None
        return agent

    def _options(self) -> RunOptions:
        a, settings = self.agent, self.settings
        kb_fp = kb_fingerprint(self.config)
        agent_fp = agent_fingerprint(
            a.spec,
            a.options,
            a.base_dir,
            kb_fp,
            cwd=a.base_dir,
            inputs=replace(a.inputs, globs=()),  # its code alone: the copy's digest below covers the rest
            environ=settings.environ,
            exclude=self.suite.files,
        )
        if agent_fp is not None:  # the pull request's agent may read any file of its tree
            agent_fp = None if self._copy_digest is None else f"{agent_fp}-{self._copy_digest}"
        cached = (
            self.config.cache.answers and settings.answer_cache and uses_answer_cache(a.spec) and not a.remote
        )
        cache = AnswerCache(settings.cache_dir) if cached and agent_fp else None
        return replace(
            self._opts,
            out=None,
            agent_fingerprint=agent_fp or "",
            kb_fingerprint=kb_fp,
            answer_cache=cache,
            sandbox=self.isolation,
        )
