"""`sqlcanary check [--base REF] [--head REF]`: the local pull-request check.

Head is the working tree (or a worktree of --head); base is a temporary `git worktree` of the base commit.
Each is evaluated by `sqlcanary run` in its own process (an in-process Python agent of one tree must never
serve the other), then compared. A base run is cached under `cache_dir()/runs/`, keyed by everything that
decides its result; answers are cached by agent fingerprint, so an unchanged KB costs no agent call.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import bot
from bot.cache import RunCache, run_cache_key
from bot.commands.compare import add_gate_arguments, gate_from_args, render_summary
from bot.commands.run import add_run_arguments, choose_agent, fingerprints, repeats, suite_and_cases
from bot.compare import Comparison, compare_head_only, compare_runs
from bot.config import CONFIG_NAMES, Config, database_url, load_config
from bot.db.provision import Server, provision
from bot.db.templates import fixture_fingerprint
from bot.errors import (
    EXIT_BAD_INPUT,
    EXIT_BUG,
    EXIT_GATE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ConfigError,
    SqlcanaryError,
)
from bot.gitrepo import default_base_ref, git_sha, resolve_commit, toplevel, worktree
from bot.results import EVALUATOR_VERSION, RunResult, read_run, write_json_atomic, write_run
from bot.runner import sqlcanary_version

DEFAULT_OUT_DIR = "sqlcanary-results"
# The options a check hands on to both runs as they are.
_VALUE_FLAGS = ("agent", "agent_timeout", "jobs", "preset", "statement_timeout", "row_cap", "repeat", "tags")
_EXIT = {"pass": EXIT_OK, "regressions": EXIT_GATE, "incomparable": EXIT_BAD_INPUT}
# `sqlcanary run` in a child process, importing this very sqlcanary (not a `bot/` the checked-out tree holds).
_BOOT = "import sys; sys.path.insert(0, {root!r}); from bot.cli import main; sys.exit(main(sys.argv[1:]))"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", nargs="?", help="suite folder or file (default: `suite` in sqlcanary.yml)")
    p.add_argument("--base", help="the commit to compare with (default: GITHUB_BASE_REF, origin/main, main)")
    p.add_argument("--head", help="the commit under review (default: the working tree, as it is)")
    p.add_argument("--config", help="sqlcanary.yml (default: the suite folder's, then ./sqlcanary.yml)")
    add_run_arguments(p)
    p.add_argument("--out", help=f"folder for base.json, head.json, comparison.json, comment.md "
                                 f"(default: {DEFAULT_OUT_DIR})")  # fmt: skip
    p.add_argument("--force", action="store_true", help="compare even when fixtures or settings differ")
    p.add_argument("--no-base-cache", action="store_true", help="evaluate the base even when a run is cached")
    add_gate_arguments(p)


@dataclass(frozen=True)
class Tree:
    """One side of the comparison: a checked-out tree and the paths of the run inside it."""

    label: str  # "base" or "head"
    root: Path
    sha: str | None
    cwd: Path
    config: Config
    config_file: Path | None
    working: bool = False  # the user's own checkout, not a temporary worktree


def _inside(path: Path, repo: Path, root: Path) -> Path:
    """`path` (as seen from the user's checkout) in the tree at `root`; paths outside the repository stay."""
    try:
        return root / path.resolve().relative_to(repo)
    except ValueError:
        return path.resolve()


def _config_file(args: argparse.Namespace, repo: Path, root: Path, cwd: Path) -> Path | None:
    if args.config:
        found = _inside(Path(args.config), repo, root)
        if not found.is_file():
            raise ConfigError("no such config file in this tree", path=str(found))
        return found
    suite = _inside(Path(args.suite), repo, root) if args.suite else None
    folders = [suite, cwd] if suite and suite.is_dir() else [cwd]
    return next((f / n for f in folders for n in CONFIG_NAMES if (f / n).is_file()), None)


def _tree(args: argparse.Namespace, *, label: str, repo: Path, root: Path, sha: str | None) -> Tree:
    cwd = _inside(Path.cwd(), repo, root)
    if not cwd.is_dir():
        raise ConfigError(f"the current folder does not exist in the {label} commit", path=str(cwd))
    config_file = _config_file(args, repo, root, cwd)
    config = load_config(config_file) if config_file else Config(base_dir=str(cwd))
    return Tree(label=label, root=root, sha=sha, cwd=cwd, config=config, config_file=config_file)


def _from_cwd(path: Path, tree: Tree) -> str:
    """A path as the run in `tree` should see it: relative to its folder when inside the tree, so case
    sources in reports read `benchmarks/shop/cases/x.yml:12` on both sides, not a temporary worktree's path."""
    return os.path.relpath(path, tree.cwd) if path.is_relative_to(tree.root) else str(path)


def _tree_args(args: argparse.Namespace, tree: Tree, repo: Path, *, relative: bool) -> argparse.Namespace:
    """The user's options with the suite path moved into `tree` (relative to its folder, or absolute)."""
    suite = _inside(Path(args.suite), repo, tree.root) if args.suite else None
    if suite is None and tree.config.suite:
        suite = tree.config.path(tree.config.suite).resolve()
    where = (_from_cwd(suite, tree) if relative else str(suite)) if suite else None
    return argparse.Namespace(**{**vars(args), "suite": where, "shard": None})


def base_run_key(args: argparse.Namespace, tree: Tree, repo: Path, server: Server) -> str | None:
    """(base sha, config file, suite, fixtures, agent and KB fingerprints, repeats, preset, case selection,
    evaluator and sqlcanary versions); None when the agent's answers may change with nothing here changing (a
    remote agent, or one whose inputs cannot be fingerprinted): its base run is then never reused."""
    targs = _tree_args(args, tree, repo, relative=False)
    suite, cases = suite_and_cases(targs, tree.config)
    choice = choose_agent(targs, tree.config, cwd=str(tree.cwd))
    agent_fp, kb_fp = fingerprints(choice, tree.config, suite, cwd=str(tree.cwd))
    if agent_fp is None or choice.remote:
        return None
    used = sorted({c.db for c in cases})
    config_hash = hashlib.sha256(tree.config_file.read_bytes()).hexdigest() if tree.config_file else ""
    return run_cache_key({
        "base_sha": tree.sha, "config": config_hash, "suite": suite.content_hash,
        "fixtures": {db: fixture_fingerprint(suite.databases[db], server) for db in used},
        "agent": agent_fp, "kb": kb_fp, "repeats": repeats(args), "preset": args.preset or tree.config.preset,
        "cases": [c.id for c in cases], "statement_timeout": args.statement_timeout or tree.config.statement_timeout,
        "row_cap": args.row_cap or tree.config.row_cap, "agent_timeout": choice.timeout_s,
        "evaluator": EVALUATOR_VERSION,
        "sqlcanary": sqlcanary_version(),
    })  # fmt: skip


def _run_argv(args: argparse.Namespace, tree: Tree, repo: Path, out: Path) -> list[str]:
    targs = _tree_args(args, tree, repo, relative=True)
    argv = ["run", "--out", str(out)]
    argv += [targs.suite] if targs.suite else []
    argv += ["--config", _from_cwd(tree.config_file, tree)] if tree.config_file else []
    for flag in _VALUE_FLAGS:
        value = getattr(args, flag)
        argv += [f"--{flag.replace('_', '-')}", str(value)] if value is not None else []
    for name in args.ids or []:
        argv += ["--id", name]
    for flag in ("persistent", "no_answer_cache", "quiet"):
        argv += [f"--{flag.replace('_', '-')}"] if getattr(args, flag) else []
    return argv


def evaluate_tree(args: argparse.Namespace, tree: Tree, repo: Path, server: Server, out: Path) -> RunResult:
    """`sqlcanary run` in the tree, in a child process; its RunResult is written to `out`."""
    code = _BOOT.format(root=str(Path(bot.__file__).resolve().parents[1]))
    argv = [sys.executable, "-c", code, *_run_argv(args, tree, repo, out)]
    env = {**os.environ, "DATABASE_URL": server.admin_dsn}
    out.unlink(missing_ok=True)  # never mistake an earlier check's file for this run's
    proc = subprocess.Popen(argv, cwd=tree.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        rc = proc.wait()
    except BaseException:
        _stop(proc)
        raise
    if rc == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if rc not in (0, EXIT_BUG) or not out.is_file():
        raise ConfigError(f"evaluating the {tree.label} ({_describe(tree)}) failed with exit code {rc}; "
                          "the error is printed above")  # fmt: skip
    return read_run(out)


def _stop(proc: subprocess.Popen) -> None:
    """Let the child drop its databases: a Ctrl-C in the terminal reached it too, so give it a moment; then
    SIGINT (we were stopped some other way); kill it only if it still does not stop."""
    for signum, grace in ((None, 3), (signal.SIGINT, 15)):
        if signum is not None:
            proc.send_signal(signum)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.kill()
    proc.wait()


def _describe(tree: Tree) -> str:
    sha = tree.sha[:12] if tree.sha else "no commit"
    return f"working tree at {sha}" if tree.label == "head" and tree.working else sha


def _base_run(args: argparse.Namespace, tree: Tree, repo: Path, server: Server, out: Path) -> RunResult:
    enabled = tree.config.cache.runs and not args.no_base_cache
    key = base_run_key(args, tree, repo, server) if enabled else None
    cache = RunCache()
    cached = cache.get(key) if key else None
    if key and cached is not None:
        _say(args, f"base {_describe(tree)}: reusing the cached run {cache.path(key)}")
        write_run(out, cached)
        return cached
    _say(args, f"base {_describe(tree)}: evaluating in a temporary worktree")
    run = evaluate_tree(args, tree, repo, server, out)
    if key and run.meta.complete and not any(c.error_class == "internal_error" for c in run.cases):
        cache.put(key, run)
    return run


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(f"sqlcanary check: {text}", file=sys.stderr)


def _write_reports(comparison: Comparison, base: RunResult | None, head: RunResult, out_dir: Path) -> list[str]:
    write_json_atomic(out_dir / "comparison.json", comparison.model_dump_json(indent=2) + "\n")
    written = [*(["base.json"] if base else []), "head.json", "comparison.json"]
    try:
        from bot.report.render import render
    except ImportError:  # the report package is optional here
        return written
    write_json_atomic(out_dir / "comment.md", render("md", comparison, head=head, base=base))
    return [*written, "comment.md"]


def _missing_baseline(head: Tree, suite: str | None, base_root: Path) -> str | None:
    """Why the base commit cannot be evaluated the way the head is, when it simply predates sqlcanary (the first
    pull request that adds the suite or the config): then there is no baseline, and the head is judged alone."""
    for what, path in (("config", head.config_file), ("suite", Path(suite) if suite else None)):
        if path is None:
            continue
        try:
            rel = path.resolve().relative_to(head.root.resolve())
        except ValueError:  # outside the repository: the same file for both sides
            continue
        if not (base_root / rel).exists():
            return f"the base commit has no {what} `{rel.as_posix()}`"
    return None


def _head_tree(args: argparse.Namespace, stack: ExitStack, repo: Path) -> Tree:
    if not args.head:
        return replace(_tree(args, label="head", repo=repo, root=repo, sha=git_sha(repo)), working=True)
    sha = resolve_commit(repo, args.head)
    root = stack.enter_context(worktree(repo, sha, label="head"))
    return _tree(args, label="head", repo=repo, root=root, sha=sha)


def main(args: argparse.Namespace) -> int:
    repo = toplevel(Path.cwd())
    base_ref = args.base or default_base_ref(repo)
    base_sha = resolve_commit(repo, base_ref)
    out_dir = Path(args.out or DEFAULT_OUT_DIR).resolve()
    base_run: RunResult | None = None
    with ExitStack() as stack:
        head = _head_tree(args, stack, repo)
        server = provision(
            dsn=database_url(args.dsn, head.config), mode=args.postgres or head.config.postgres
        )
        base_root = stack.enter_context(worktree(repo, base_sha, label="base"))
        _say(args, f"base {base_ref} ({base_sha[:12]}) vs head {args.head or 'working tree'}")
        missing = _missing_baseline(head, _tree_args(args, head, repo, relative=False).suite, base_root)
        if missing:
            _say(args, f"no baseline: {missing}; the head is judged alone")
            (out_dir / "base.json").unlink(missing_ok=True)
        else:
            try:
                base = _tree(args, label="base", repo=repo, root=base_root, sha=base_sha)
                base_run = _base_run(args, base, repo, server, out_dir / "base.json")
            except SqlcanaryError as exc:
                raise ConfigError(f"base {base_sha[:12]}: {exc}") from exc
        _say(
            args, f"head {_describe(head)}: evaluating" + ("" if head.working else " in a temporary worktree")
        )
        head_run = evaluate_tree(args, head, repo, server, out_dir / "head.json")
    if base_run is None:
        # No base config to take the gate from: the head's `min_pass_rate` (or the flag) alone decides.
        comparison = compare_head_only(head_run, gate=gate_from_args(args, defaults=head.config.gate),
                                       reason=str(missing))  # fmt: skip
    else:
        # The base's `gate:`, not the head's: a change must not loosen the rules it is judged by.
        gate = gate_from_args(args, defaults=base.config.gate)
        comparison = compare_runs(base_run, head_run, gate=gate, force=args.force)
    written = _write_reports(comparison, base_run, head_run, out_dir)
    print(render_summary(comparison))
    print(f"\nresults in {out_dir}: {', '.join(written)}")
    runs = [r for r in (base_run, head_run) if r is not None]
    bugs = [c.id for r in runs for c in r.cases if c.error_class == "internal_error"]
    return EXIT_BUG if bugs and _EXIT[comparison.verdict] == 0 else _EXIT[comparison.verdict]
