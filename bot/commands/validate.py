"""`sqlcanary validate [CONFIG] [--suite SUITE]`: the config, its suite, its KB and its agent spec checked
without a database or an agent (bot.validate.pipeline). Every problem is printed, one a line, as
`file:line: key.path: what is wrong`; exit 2 when any is an error, 0 when there are none (warnings alone)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bot.base.errors import EXIT_BAD_INPUT, EXIT_OK
from bot.base.settings import Settings
from bot.config.problems import Problem
from bot.validate.pipeline import Validation, locate_config, validate


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "config",
        nargs="?",
        metavar="CONFIG",
        help="sqlcanary.yml, or its folder (default: the nearest one from here up to the repository root)",
    )
    p.add_argument("--suite", help="the suite to check (default: the config's `suite:`)")


def _shown(path: str | Path, cwd: Path) -> str:
    """A path relative to the current folder when it is inside it, or in a folder above it (`../sqlcanary.yml`
    from a subfolder of the project), else absolute: the same output wherever the current folder happens to be."""
    p = Path(path).resolve()
    try:
        if p.is_relative_to(cwd) or cwd.is_relative_to(p.parent):
            return os.path.relpath(p, cwd)
    except (OSError, ValueError):  # another drive
        return str(path)
    return str(p)


def _line(problem: Problem, cwd: Path) -> str:
    where = _shown(problem.path, cwd) if problem.path else ""
    where = f"{where}:{problem.line}" if problem.line is not None else where
    tag = "warning: " if problem.severity == "warning" else ""
    return f"{where}: {tag}{problem.what}" if where else f"{tag}{problem.what}"


def _summary(v: Validation, cwd: Path) -> str:
    parts = [_shown(v.config_file, cwd)]
    if v.suite is not None:
        cases = f" ({v.cases} case{'s' if v.cases != 1 else ''})" if v.cases is not None else ""
        parts.append(f"suite {_shown(v.suite, cwd)}{cases}")
    parts.append(f"KB ({v.kb_files} file{'s' if v.kb_files != 1 else ''})")
    checked = ", ".join(parts)
    n_err, n_warn = len(v.errors), len(v.warnings)
    if not n_err:
        also = f" ({n_warn} warning{'s' if n_warn != 1 else ''})" if n_warn else ""
        return f"valid: {checked}{also}"
    warn = f" and {n_warn} warning{'s' if n_warn != 1 else ''}" if n_warn else ""
    return f"{n_err} error{'s' if n_err != 1 else ''}{warn}: {checked}"


def main(args: argparse.Namespace, settings: Settings) -> int:
    cwd = Path.cwd().resolve()
    result = validate(locate_config(args.config, cwd), suite=args.suite)
    for problem in result.problems:
        print(_line(problem, cwd))
    print(f"sqlcanary validate: {_summary(result, cwd)}")
    return EXIT_BAD_INPUT if result.errors else EXIT_OK
