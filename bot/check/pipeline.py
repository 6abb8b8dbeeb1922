"""The pull-request check: evaluate the base and the head (each in its own `sqlcanary run` process, bot.check.trees),
compare them under the base's rules, link the regressions to the change, and write the files. `run_check` is what
`sqlcanary check` and the GitHub Action call."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from bot.base.errors import EXIT_BUG, ConfigError, SqlcanaryError
from bot.base.git import committed_under, default_base_ref, git_sha, resolve_commit, toplevel, worktree
from bot.base.results import EVALUATOR_VERSION, RunResult, write_json_atomic, write_run
from bot.base.settings import ENV_CACHE_DIR, Settings
from bot.check.request import CheckRequest
from bot.check.trees import (
    Tree,
    base_tree,
    decide_head,
    evaluate_tree,
    open_tree,
    pr_diff,
    suite_roots,
    tree_request,
)
from bot.compare.causes import explain_comparison
from bot.compare.comparison import NO_BASELINE, Comparison, compare_head_only, compare_runs
from bot.compare.diff import FileDiff
from bot.compare.gate import exit_code, resolve_gate
from bot.compare.transitions import is_edited
from bot.config.model import Config
from bot.db.provision import Server
from bot.db.templates import fixture_fingerprint
from bot.repair.causal import CausalFindings, causal_notes, find_causes
from bot.report.console import cache_line
from bot.report.redact import redact_model
from bot.run.cache import RunCache, run_cache_key
from bot.run.request import RunRequest
from bot.run.runner import sqlcanary_version
from bot.run.server import provision_server
from bot.run.setup import choose_agent, fingerprints, suite_and_cases

DEFAULT_OUT_DIR = "sqlcanary-results"

Say = Callable[[str], None]


@dataclass(frozen=True)
class CheckResult:
    """What a check found: both runs (no base run for a first pull request), their comparison, where the files
    are, and the shas it compared."""

    base: RunResult | None
    head: RunResult
    comparison: Comparison
    out_dir: Path
    files: tuple[str, ...]  # written to out_dir
    base_sha: str
    head_sha: str | None
    head_config: Config | None = (
        None  # the config the head was evaluated with (the base's, but for its agent)
    )
    found: CausalFindings | None = (
        None  # the KB changes that broke each regressed case, and the partial revert
    )

    @property
    def bugs(self) -> list[str]:
        """Cases that hit an internal error (a bug in sqlcanary) on either side."""
        runs = [r for r in (self.base, self.head) if r is not None]
        return [c.id for r in runs for c in r.cases if c.error_class == "internal_error"]

    @property
    def exit_code(self) -> int:
        code = exit_code(self.comparison.verdict)
        return EXIT_BUG if self.bugs and code == 0 else code


@dataclass(frozen=True)
class BaseKey:
    """A base run's cache key, and what a cached run must record to be used under it."""

    key: str
    sha: str | None
    agent_fingerprint: str
    kb_fingerprint: str

    def matches(self, run: RunResult) -> bool:
        """A cached run is used only when it says it is this commit's, with these fingerprints: a file planted
        under the key's name (by a commit, or another job's cache) is never taken on its name alone."""
        m = run.meta
        return (
            m.git_sha == self.sha
            and m.agent_fingerprint == self.agent_fingerprint
            and m.kb_fingerprint == self.kb_fingerprint
        )


def base_run_key(
    req: RunRequest, tree: Tree, repo: Path, server: Server, settings: Settings
) -> BaseKey | None:
    """(base sha, config file, suite, fixtures, agent and KB fingerprints, repeats, perturbed copies, preset, case
    selection, evaluator and sqlcanary versions); None when the agent's answers may change with nothing here
    changing (a remote agent, or one whose inputs cannot be fingerprinted): its base run is then never reused."""
    treq = tree_request(req, tree, repo, relative=False)
    suite, cases = suite_and_cases(treq, tree.config)
    choice = choose_agent(treq, tree.config, cwd=str(tree.cwd))
    agent_fp, kb_fp = fingerprints(choice, tree.config, suite, settings, cwd=str(tree.cwd))
    if agent_fp is None or choice.remote:
        return None
    used = sorted({c.db for c in cases})
    config_hash = hashlib.sha256(tree.config_file.read_bytes()).hexdigest() if tree.config_file else ""
    key = run_cache_key(
        {
            "base_sha": tree.sha,
            "config": config_hash,
            "suite": suite.content_hash,
            "fixtures": {db: fixture_fingerprint(suite.databases[db], server) for db in used},
            "agent": agent_fp,
            "kb": kb_fp,
            "repeats": req.repeat,
            "perturb": req.perturb if req.perturb is not None else tree.config.perturb,
            "preset": req.preset or tree.config.preset,
            "cases": [c.id for c in cases],
            "statement_timeout": req.statement_timeout or tree.config.statement_timeout,
            "row_cap": req.row_cap or tree.config.row_cap,
            "agent_timeout": choice.timeout_s,
            "evaluator": EVALUATOR_VERSION,
            "sqlcanary": sqlcanary_version(),
        }
    )
    return BaseKey(key=key, sha=tree.sha, agent_fingerprint=agent_fp, kb_fingerprint=kb_fp)


def _base_run(
    req: CheckRequest, tree: Tree, repo: Path, server: Server, out: Path, settings: Settings, say: Say
) -> tuple[RunResult, bool]:
    """The base commit's run, from the cache when everything that decides it is unchanged (and whether it was)."""
    enabled = tree.config.cache.runs and not req.no_base_cache
    key = base_run_key(req.run, tree, repo, server, settings) if enabled else None
    cache = RunCache(settings.cache_dir)
    cached = cache.get(key.key) if key else None
    if key and cached is not None and not key.matches(cached):
        say(
            f"base {tree.describe()}: the cached run {cache.path(key.key)} is not this commit's run (its sha or "
            "fingerprints differ): not used"
        )
        cached = None
    if key and cached is not None:
        say(f"base {tree.describe()}: reusing the cached run {cache.path(key.key)}")
        write_run(out, cached)
        return cached, True
    say(f"base {tree.describe()}: evaluating" + ("" if tree.working else " in a temporary worktree"))
    run = evaluate_tree(req.run, tree, repo, server, out, settings)
    if run.meta.cache_hits:
        say(f"base {tree.describe()}: {cache_line(run.meta)}")
    if key and run.meta.complete and not any(c.error_class == "internal_error" for c in run.cases):
        cache.put(key.key, run)
    return run, False


def _anchored(req: CheckRequest) -> CheckRequest:
    """The request with its run's paths absolute (against `run.cwd`, else the current folder's)."""
    return replace(req, run=req.run.anchored())


def run_baseline(
    req: CheckRequest, settings: Settings, *, out: Path, say: Say = lambda _: None
) -> tuple[RunResult, bool]:
    """Evaluate the checked-out commit as a future base and cache it (a push to the default branch): a later
    check whose base is this commit then reuses it. The checkout must be clean, as a worktree of it would be."""
    req = _anchored(req)
    repo = toplevel(req.run.folder, environ=settings.environ)
    sha = git_sha(repo, environ=settings.environ)
    tree = open_tree(req.run, label="base", repo=repo, root=repo, sha=sha, working=True)
    server = provision_server(req.run.dsn, tree.config, settings, req.run.postgres)
    return _base_run(req, tree, repo, server, out, settings, say)


def write_reports(
    comparison: Comparison,
    base: RunResult | None,
    head: RunResult,
    out_dir: Path,
    *,
    secrets: tuple[str, ...],
    comment: bool = True,
) -> tuple[str, ...]:
    """comparison.json, the sticky comment and the HTML report (causes and latency both) beside the runs
    (base.json, head.json) already in `out_dir`."""
    from bot.report.render import render

    write_json_atomic(out_dir / "comparison.json", comparison.model_dump_json(indent=2) + "\n")
    if not comment:
        return (*(["base.json"] if base else []), "head.json", "comparison.json")
    write_json_atomic(out_dir / "comment.md", render("md", comparison, head=head, base=base, secrets=secrets))
    html = render("html", comparison, head=head, base=base, secrets=secrets)
    write_json_atomic(out_dir / "report.html", html)
    return (*(["base.json"] if base else []), "head.json", "comparison.json", "comment.md", "report.html")


def _head_tree(req: CheckRequest, stack: ExitStack, repo: Path, environ: Mapping[str, str]) -> Tree:
    if not req.head:
        sha = git_sha(repo, environ=environ)
        return open_tree(req.run, label="head", repo=repo, root=repo, sha=sha, working=True)
    sha = resolve_commit(repo, req.head, environ=environ)
    root = stack.enter_context(worktree(repo, sha, label="head", environ=environ))
    return open_tree(req.run, label="head", repo=repo, root=root, sha=sha)


def _gold(req: CheckRequest, head: Tree, repo: Path) -> dict[str, tuple[str, ...]]:
    """{case id: gold SQL alternatives} of the head's suite, for the reports; {} when it cannot be read (the
    head's run already said why)."""
    try:
        _, cases = suite_and_cases(tree_request(req.run, head, repo, relative=False), head.config)
    except SqlcanaryError:
        return {}
    return {c.id: tuple(c.gold_sql) for c in cases}


def _explained(
    comparison: Comparison,
    diff: tuple[FileDiff, ...],
    *,
    roots: tuple[str, ...],
    gold: dict[str, tuple[str, ...]],
    linked: bool,
) -> Comparison:
    if linked:
        return explain_comparison(comparison, diff, roots=roots, gold=gold)
    cases = tuple(c.model_copy(update={"gold_sql": gold.get(c.id, c.gold_sql)}) for c in comparison.cases)
    return comparison.model_copy(update={"cases": cases})


def run_check(req: CheckRequest, settings: Settings, *, say: Say = lambda _: None) -> CheckResult:
    """Evaluate base and head, compare them under the base commit's gate, write the files; raise a
    SqlcanaryError for what the user must fix (exit 2)."""
    req = _anchored(req)
    git_env = settings.environ  # git gets its allow-listed part only (bot.base.childenv)
    repo = toplevel(req.run.folder, environ=git_env)
    base_ref = req.base or default_base_ref(repo, settings.base_branch, environ=git_env)
    base_sha = resolve_commit(repo, base_ref, environ=git_env)
    out_dir = (req.run.folder / (req.out_dir or DEFAULT_OUT_DIR)).resolve()
    base_run: RunResult | None = None
    with ExitStack() as stack:
        head = _head_tree(req, stack, repo, git_env)
        settings, cache_notes = _unplanted(settings, repo, head, stack)
        base_root = stack.enter_context(worktree(repo, base_sha, label="base", environ=git_env))
        say(f"base {base_ref} ({base_sha[:12]}) vs head {req.head or 'working tree'}")
        try:
            base = base_tree(req.run, repo=repo, root=base_root, sha=base_sha)
        except SqlcanaryError as exc:
            raise ConfigError(f"base {base_sha[:12]}: {exc}") from exc
        head = decide_head(req.run, head, base, trust_alone=req.trust_head_config)
        head = replace(head, notes=(*cache_notes, *head.notes))
        for note in head.notes:
            say(note)
        server = provision_server(req.run.dsn, head.config, settings, req.run.postgres)
        if base is None:
            say(f"no baseline: {NO_BASELINE}; the head is judged alone")
            (out_dir / "base.json").unlink(missing_ok=True)
        else:
            try:
                base_run, _ = _base_run(req, base, repo, server, out_dir / "base.json", settings, say)
            except SqlcanaryError as exc:
                raise ConfigError(f"base {base_sha[:12]}: {exc}") from exc
        say(f"head {head.describe()}: evaluating" + ("" if head.working else " in a temporary worktree"))
        head_run = evaluate_tree(req.run, head, repo, server, out_dir / "head.json", settings)
        if head_run.meta.cache_hits:
            say(f"head {head.describe()}: {cache_line(head_run.meta)}")
        if head_run.meta.sandbox:
            say(f"the head's agent ran with sandbox: {head_run.meta.sandbox}")
        # While the head tree exists: the diff the regressions are linked to, the folders `used` paths are
        # relative to, and the gold SQL the reports show.
        head_sha = None if head.working else head.sha
        diff = pr_diff(repo, base_sha, head_sha, environ=git_env) if base_run is not None else ()
        roots = suite_roots(req.run, head, repo)
        gold = _gold(req, head, repo)
        # The head's config is the base's (bot.config.trusted), so its gate is the base's: a change must not
        # loosen the rules it is judged by. Without a base config, the head's own gate alone decides.
        gate = resolve_gate(head.config.gate, req.gate)
        if base_run is None or base is None:
            comparison = compare_head_only(head_run, gate=gate, reason=NO_BASELINE)
        else:
            cross = _judged_by_base(req, base, head_run, base_run, repo, server, out_dir, settings, say)
            comparison = compare_runs(
                base_run, head_run, gate=gate, force=req.force, edited_against_base=cross
            )
        found = None
        if base_run is not None and req.attribute_calls and comparison.judged_as("regressed"):
            found = _attribute(req, comparison, diff, head, repo, base_root, server, settings, head_run, say)
    comparison = _explained(comparison, diff, roots=roots, gold=gold, linked=base_run is not None)
    if found is not None:
        comparison = comparison.model_copy(update={"warnings": (*comparison.warnings, *causal_notes(found))})
    if head.notes:
        comparison = comparison.model_copy(update={"warnings": (*head.notes, *comparison.warnings)})
    if settings.secrets:  # the diff and the suite's gold SQL come from the trees, not from the masked runs
        comparison = redact_model(comparison, settings.secrets)
    files = write_reports(
        comparison, base_run, head_run, out_dir, secrets=settings.secrets, comment=req.write_comment
    )
    return CheckResult(
        head_config=head.config,
        found=found,
        base=base_run,
        head=head_run,
        comparison=comparison,
        out_dir=out_dir,
        files=files,
        base_sha=base_sha,
        head_sha=head.sha,
    )


def _attribute(
    req: CheckRequest,
    comparison: Comparison,
    diff: tuple[FileDiff, ...],
    head: Tree,
    repo: Path,
    base_root: Path,
    server: Server,
    settings: Settings,
    head_run: RunResult,
    say: Say,
) -> CausalFindings:
    """Delta debugging over the pull request's KB line changes for each regressed case (on a copy of the head's
    tree, the agent sandboxed as in any run), and the partial revert verified on the whole suite."""
    treq = tree_request(req.run, head, repo, relative=False)
    suite, _ = suite_and_cases(treq, head.config)
    regressed = [c.id for c in comparison.judged_as("regressed")]
    say(
        f"finding which KB change broke {len(regressed)} regressed case(s) (at most {req.attribute_calls} agent calls)"
    )
    return find_causes(
        diff,
        config=head.config,
        base_root=base_root,
        head_root=head.root,
        suite=suite,
        server=server,
        settings=settings,
        agent=choose_agent(treq, head.config, cwd=str(head.cwd)),
        head={c.id: c.status for c in head_run.cases},
        regressed=regressed,
        base_pass_rate=comparison.overall.base_rate,
        max_agent_calls=req.attribute_calls,
    )


def _unplanted(
    settings: Settings, repo: Path, head: Tree, stack: ExitStack
) -> tuple[Settings, tuple[str, ...]]:
    """The settings with a cache folder no commit planted anything in: when git tracks a file under the cache
    folder, or the head commit holds one, no file there is read (a committed `runs/<key>.json` or answer would
    otherwise decide the verdict); the check runs with a fresh, empty cache instead, and says so."""
    revs = ("HEAD",) if head.working or not head.sha else ("HEAD", head.sha)
    planted = committed_under(repo, settings.cache_dir, revs, environ=settings.environ)
    if not planted:
        return settings, ()
    fresh = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sqlcanary-cache-")))
    env = MappingProxyType({**settings.environ, ENV_CACHE_DIR: str(fresh)})
    note = (
        f"the cache folder holds {len(planted)} file(s) a commit put there (`{planted[0]}`): no file there is "
        "read, and this check ran without a cache"
    )
    return replace(settings, cache_dir=fresh, environ=env), (note,)


def _edited_ids(base_run: RunResult, head_run: RunResult) -> list[str]:
    """Cases the head edited (bot.compare.transitions.is_edited) that passed on the base."""
    base = {c.id: c for c in base_run.cases}
    return [c.id for c in head_run.cases if is_edited(base.get(c.id), c) and base[c.id].status == "passed"]


def _judged_by_base(
    req: CheckRequest,
    base: Tree,
    head_run: RunResult,
    base_run: RunResult,
    repo: Path,
    server: Server,
    out_dir: Path,
    settings: Settings,
    say: Say,
) -> dict[str, str]:
    """{case id: status} of the head's answers to the cases it edited, judged by the base's version of each case
    (in the base's tree, by the base's gold): a pull request cannot rewrite a gold to match its own break."""
    ids = _edited_ids(base_run, head_run)
    if not ids:
        return {}
    say(f"{len(ids)} edited case(s): judging the head's answers by the base's version too")
    head_json = out_dir / "head.json"
    cross = replace(req.run, agent=f"run:{head_json}", ids=tuple(ids), tags=(), repeat=1, persistent=False)
    run = evaluate_tree(cross, base, repo, server, out_dir / "edited-by-base.json", settings)
    return {c.id: c.status for c in run.cases}
