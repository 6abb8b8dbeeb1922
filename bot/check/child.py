"""The `sqlcanary run` that evaluates one tree, in a child process of its own.

The child gets an allow-listed environment and the config the check decided for its side (for the head: the
base's, but for its agent; bot.config.trusted), from a file only this user can read; the head's child also gets
its suite from there, as the head's reader parsed it (bot.check.head_reader), and parses none of its YAML. The
pull request's own agent code runs below it as a sandbox user when sqlcanary is root (bot.agents.sandbox), so it
sees neither GITHUB_TOKEN, INPUT_*, the admin DSN nor an LLM key unless the base's config names the variable for
it (`agent.env`, or `llm.api_key_env` for the built-in agent). What the child writes is read back as data and masked."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Literal

from bot.agents.env import agent_environment
from bot.base.errors import EXIT_BUG, EXIT_INTERRUPTED, ConfigError
from bot.base.resultfiles import ResultFiles
from bot.base.results import RunResult, read_run
from bot.base.selfchild import self_argv, wait_child
from bot.base.settings import Settings
from bot.cases.suite_doc import SuiteDoc
from bot.check.sides import Side
from bot.config.model import Config
from bot.config.trusted import write_resolved
from bot.db.provision import Server


def child_environment(settings: Settings, config: Config, server: Server) -> dict[str, str]:
    """What a tree's `sqlcanary run` (and so the tree's agent) may see: the allow-list, the variables the tree's
    `config` names, sqlcanary's own settings, and the database to use."""
    names = list(config.agent.env) if config.agent else []
    spec = config.agent.spec if config.agent else ""
    if spec.partition(":")[0].strip() == "llm":
        names.append(config.llm.api_key_env)  # the built-in agent asks the model with this key
    env = agent_environment(settings.environ, allow=tuple(names))
    env.update({k: v for k, v in settings.environ.items() if k.startswith("SQLCANARY_")})
    env["DATABASE_URL"] = server.admin_dsn
    return env


def evaluate_side(side: Side, server: Server, out: Path, settings: Settings) -> RunResult:
    """`sqlcanary run` of the side's request in its tree, in a child process; its RunResult is written to `out`
    and read back as data: validated, and masked of this process's secrets."""
    tree = side.tree
    out.unlink(missing_ok=True)  # never mistake an earlier check's file for this run's
    # The child loads exactly the config decided here (the head's is the base's but for its agent), from a file
    # only this user can read: no file of the tree decides it, and a DSN in it never sits where the agent reads.
    env = child_environment(settings, tree.config, server)
    with tempfile.TemporaryDirectory(prefix="sqlcanary-config-") as private:
        resolved = write_resolved(tree.config, Path(private) / f"{tree.label}.json")
        # `--side head`: the pull request's agent, whose cached answers are keyed by its whole tree
        label: Literal["base", "head"] = "head" if tree.label == "head" else "base"
        child = replace(side.relative_run, out=str(out), config=str(resolved), side=label)
        # The head's suite, as its reader parsed it: the child parses no YAML of it.
        if tree.files is not None:
            data = Path(private) / f"{tree.label}-suite.json"
            data.write_text(SuiteDoc.of(side.suite).model_dump_json(), encoding="utf-8")
            child = replace(child, suite_data=str(data))
        proc = subprocess.Popen(
            self_argv("bot.cli", *child.run_argv()),
            cwd=tree.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        rc = wait_child(proc)
    if rc == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if rc not in (0, EXIT_BUG) or not out.is_file():
        raise ConfigError(
            f"evaluating the {tree.label} ({tree.describe()}) failed with exit code {rc}; "
            "the error is printed above"
        )
    # The child never held this process's secrets (its environment is allow-listed), but its agent may have
    # printed one it found: the run is written again, masked, before anything keeps or shows it.
    return ResultFiles(out.parent, settings.secrets).model(out.name, read_run(out))
