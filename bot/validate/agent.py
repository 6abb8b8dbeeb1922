"""The config's agent spec, checked without starting it: a known kind (the closest one suggested), its argument,
and the files it names (relative to the config's folder, as a run resolves them)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from bot.config.model import Config
from bot.config.problems import Problem, closest

KINDS = ("gold", "predictions", "run", "command", "python", "llm")  # bot.agents.ADAPTERS
OPTIONAL_ARG = ("gold", "llm")


def agent_problems(config: Config, line: int | None) -> list[Problem]:
    """Problems of `agent.spec` (at `line` of the config file); none when no agent is set."""
    if config.agent is None:
        return []
    spec = config.agent.spec
    path = config.config_file or ""
    kind, _, arg = (s.strip() for s in spec.partition(":"))
    base = Path(config.base_dir)

    def problem(message: str) -> list[Problem]:
        return [Problem(path, line, "agent.spec", message)]

    if kind not in KINDS:
        guess = closest(kind, KINDS)
        hint = f"; did you mean `{guess}`?" if guess else ""
        return problem(f"unknown agent kind {kind!r}{hint} (known kinds: {', '.join(KINDS)})")
    if not arg and kind not in OPTIONAL_ARG:
        return problem(f"the {kind} agent needs an argument: {kind}:...")
    if kind in ("predictions", "run"):
        return [] if (base / arg).exists() else problem(f"no file {arg!r} (relative to {base})")
    if kind == "python":
        target = arg.rsplit(":", 1)[0]
        looks_like_file = target.endswith(".py") or "/" in target
        if looks_like_file and not (base / target).is_file():
            return problem(f"no Python file {target!r} (relative to {base})")
        return []
    if kind == "command":
        try:
            argv = shlex.split(arg)
        except ValueError as exc:
            return problem(f"cannot split the command: {exc}")
        prog = argv[0] if argv else ""
        if "/" in prog:
            return [] if (base / prog).is_file() else problem(f"no file {prog!r} (relative to {base})")
        if prog and not shutil.which(prog) and not (base / prog).is_file():
            return problem(f"cannot start {prog!r}: not found on PATH nor in {base}")
        scripts = [a for a in argv[1:] if a.endswith(".py") and not Path(a).is_absolute()]
        missing = [a for a in scripts if not (base / a).is_file()]
        if missing:
            return problem(f"no file {missing[0]!r} (relative to {base}, the folder the command runs in)")
    return []
