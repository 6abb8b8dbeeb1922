"""The few git operations sqlcanary needs: run git safely (Git), find the repository, resolve a ref safely, list
a tree's files and commit some. A commit checked out in a temporary worktree is bot.base.worktree."""

from __future__ import annotations

import base64
import subprocess
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bot.base.childenv import git_environment
from bot.base.errors import ConfigError
from bot.base.githarden import diff_args, hardening

__all__ = ["Git", "git_environment", "token_header"]  # git_environment: bot.base.childenv's, for bot.github

_TIMEOUT_S = 120


@dataclass(frozen=True)
class Git:
    """git in one folder, with an explicit environment: the one way sqlcanary runs git (the check's trees and
    diff, the Action's fetch of the base, the repair branch's push fallback). `env` is git's whole environment,
    never sqlcanary's own: build it with `git_environment(settings.environ)` (the default: PATH=os.defpath and
    GIT_TERMINAL_PROMPT=0 only), so what a caller adds (a token as GIT_CONFIG_*, a GIT_DIR) reaches only this git."""

    cwd: Path
    env: Mapping[str, str] = field(default_factory=lambda: git_environment(None), repr=False)
    timeout: float = _TIMEOUT_S

    def run(
        self,
        *args: str,
        config: tuple[str, ...] = (),
        stdin: str | None = None,
        timeout: float | None = None,
        errors: str = "strict",
    ) -> subprocess.CompletedProcess[str]:
        """`git -c CONFIG... ARGS` (never raising for git's own exit code); exit 2 (ConfigError) when git is
        missing or does not finish in time. `errors="replace"` for output that may not be UTF-8 (a diff)."""
        limit = timeout or self.timeout
        probe = partial(self._exec, stdin=None, limit=limit, errors="replace")
        settings = (*config, *hardening(lambda a: probe(["git", *a]), self.cwd))  # bot.base.githarden
        argv = ["git", *(item for c in settings for item in ("-c", c)), *diff_args(args)]
        return self._exec(argv, stdin=stdin, limit=limit, errors=errors)

    def _exec(
        self, argv: list[str], *, stdin: str | None, limit: float, errors: str
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                argv,
                cwd=self.cwd,
                env=dict(self.env),
                capture_output=True,
                text=True,
                errors=errors,
                timeout=limit,
                **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}),
            )
        except FileNotFoundError as exc:
            raise ConfigError("git is not installed (sqlcanary needs it)") from exc
        except subprocess.TimeoutExpired as exc:
            verb = " ".join(a for a in argv[1:] if not a.startswith("-") and "=" not in a)
            raise ConfigError(f"`git {' '.join(verb.split()[:2])}` did not finish within {limit:g}s") from exc


def token_header(token: str, *, url: str | None = None) -> dict[str, str]:
    """The token as actions/checkout sends it, an HTTP header (for `url`'s scheme and host only, when given),
    through git's environment config: never on a command line another process could read, nor in a file.
    No credential helper is asked, and git never prompts."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    key = "http.extraheader"
    if url is not None:
        parts = urllib.parse.urlsplit(url)
        key = f"http.{parts.scheme}://{parts.netloc}/.extraheader"
    return {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": key,
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
        "GIT_CONFIG_KEY_1": "credential.helper",
        "GIT_CONFIG_VALUE_1": "",
        "GIT_TERMINAL_PROMPT": "0",
    }


def run_git(
    args: list[str],
    *,
    cwd: Path,
    timeout: float = _TIMEOUT_S,
    stdin: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """git with the allow-listed part of `environ` (Settings.environ; None: PATH=os.defpath only)."""
    return Git(cwd, env=git_environment(environ), timeout=timeout).run(*args, stdin=stdin)


def git_sha(cwd: Path, *, environ: Mapping[str, str] | None = None) -> str | None:
    """The commit checked out in `cwd`, or None outside a repository."""
    try:
        out = run_git(["rev-parse", "HEAD"], cwd=cwd, timeout=5, environ=environ)
    except (OSError, ConfigError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def repo_root(path: Path, *, environ: Mapping[str, str] | None = None) -> Path | None:
    """The root of the repository holding `path`, or None outside one (a plain folder is no error here)."""
    try:
        out = run_git(["rev-parse", "--show-toplevel"], cwd=path, timeout=10, environ=environ)
    except (OSError, ConfigError):
        return None
    return Path(out.stdout.strip()).resolve() if out.returncode == 0 and out.stdout.strip() else None


def _z_list(out: subprocess.CompletedProcess[str], what: str) -> list[str]:
    if out.returncode != 0:
        raise ConfigError(f"git {what} failed: {out.stderr.strip()[:300]}")
    return [p for p in out.stdout.split("\0") if p]


def tree_contents(
    repo: Path,
    *,
    untracked_in: tuple[Path, ...] = (),
    skip_untracked: tuple[str, ...] = (),
    skip_untracked_names: tuple[str, ...] = (),
) -> dict[str, str]:
    """Content ids of what a program in `repo` could read: every tracked file as it is in the working tree (the
    index's blob id where git sees no change, else the id of the file's current content; "<missing>" for a
    deleted one), plus the untracked, unignored files under the folders `untracked_in`, but those under the
    folders `skip_untracked` (relative to the repository root) or under a folder named in `skip_untracked_names`
    anywhere (neither is ever listed, so never hashed). Keys are paths relative to the repository root, so two
    checkouts of one commit give the same map."""
    skipped = [f":(exclude,literal){p}" for p in skip_untracked]
    skipped += [f":(exclude,glob)**/{name}/**" for name in skip_untracked_names]
    contents: dict[str, str] = {}
    for entry in _z_list(run_git(["ls-files", "-s", "-z"], cwd=repo), "ls-files"):
        meta, _, path = entry.partition("\t")
        contents[path] = meta.split()[1]  # mode, blob id, stage
    changed = set(_z_list(run_git(["diff-files", "--name-only", "-z"], cwd=repo), "diff-files"))
    for folder in untracked_in:
        try:
            rel = folder.resolve().relative_to(repo).as_posix() or "."
        except ValueError:
            continue
        listed = run_git(["ls-files", "-z", "--others", "--exclude-standard", "--", rel, *skipped], cwd=repo)
        changed.update(_z_list(listed, "ls-files --others"))
    present = sorted(p for p in changed if (repo / p).is_file())
    contents.update({p: "<missing>" for p in changed - set(present)})
    if present:
        hashed = run_git(["hash-object", "--stdin-paths"], cwd=repo, stdin="\n".join(present) + "\n")
        ids = hashed.stdout.split()
        if hashed.returncode != 0 or len(ids) != len(present):
            raise ConfigError(f"git hash-object failed: {hashed.stderr.strip()[:300]}")
        contents.update(zip(present, ids, strict=True))
    return contents


def toplevel(cwd: Path, *, environ: Mapping[str, str] | None = None) -> Path:
    """The root of the repository holding `cwd`; ConfigError outside one."""
    out = run_git(["rev-parse", "--show-toplevel"], cwd=cwd, environ=environ)
    if out.returncode != 0:
        raise ConfigError(f"{cwd} is not inside a git repository (sqlcanary check compares two commits)")
    return Path(out.stdout.strip()).resolve()


def resolve_commit(repo: Path, ref: str, *, environ: Mapping[str, str] | None = None) -> str:
    """The full sha of `ref`, which must name a commit. Refs that look like options are refused."""
    if not ref or ref.startswith("-") or any(ch.isspace() or ord(ch) < 32 for ch in ref):
        raise ConfigError(f"not a valid git ref: {ref!r}")
    out = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=repo, environ=environ)
    sha = out.stdout.strip()
    if out.returncode != 0 or len(sha) < 40:
        raise ConfigError(f"git ref {ref!r} does not name a commit in {repo}")
    return sha


def ref_exists(repo: Path, ref: str, *, environ: Mapping[str, str] | None = None) -> bool:
    try:
        resolve_commit(repo, ref, environ=environ)
    except ConfigError:
        return False
    return True


def default_base_ref(
    repo: Path, branch: str | None = None, *, environ: Mapping[str, str] | None = None
) -> str:
    """`branch` (a pull request's target branch: origin/<branch>, then <branch>), else the repository's default
    branch, as git and gh find it: the one origin's HEAD names (`origin/HEAD`, set by a clone), then the
    `init.defaultBranch` setting, then main, then master (a `git init` before git 2.28, or with none set); the
    remote-tracking branch first, the local one then."""
    branch = (branch or "").strip()
    names = [branch] if branch else _default_branches(repo, environ)
    candidates = [ref for name in names for ref in (f"origin/{name}", name)]
    for ref in candidates:
        if ref_exists(repo, ref, environ=environ):
            return ref
    raise ConfigError(
        f"no base to compare with: none of {', '.join(candidates)} exists; pass --base REF "
        "(in CI, fetch the base branch first, e.g. actions/checkout with fetch-depth: 0)"
    )


def _default_branches(repo: Path, environ: Mapping[str, str] | None) -> list[str]:
    """The default branch's likely names, best first, without repeats."""
    names = []
    head = run_git(
        ["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], cwd=repo, environ=environ
    )
    if head.returncode == 0 and head.stdout.strip().startswith("origin/"):
        names.append(head.stdout.strip().removeprefix("origin/"))
    configured = run_git(["config", "--get", "init.defaultBranch"], cwd=repo, environ=environ)
    if configured.returncode == 0 and configured.stdout.strip():
        names.append(configured.stdout.strip())
    names += ["main", "master"]
    return [n for i, n in enumerate(names) if n and not n.startswith("-") and n not in names[:i]]


def committed_under(
    repo: Path, folder: Path, revs: tuple[str, ...] = ("HEAD",), *, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Files under `folder` that git tracks (the index) or that any of `revs` holds, relative to the repository:
    what a commit could have planted there. Empty when `folder` is outside the repository."""
    try:
        rel = folder.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return []
    found = set(_z_list(run_git(["ls-files", "-z", "--", rel or "."], cwd=repo, environ=environ), "ls-files"))
    for rev in revs:
        out = run_git(
            ["ls-tree", "-r", "-z", "--name-only", rev, "--", rel or "."], cwd=repo, environ=environ
        )
        if out.returncode == 0:
            found.update(p for p in out.stdout.split("\0") if p)
    return sorted(found)


def commit_files(
    root: Path, files: tuple[str, ...], message: str, *, environ: Mapping[str, str] | None = None
) -> str:
    """Commit exactly `files` (relative to `root`) on the current branch; the new commit's sha. `environ` gives
    git its identity (GIT_AUTHOR_*, GIT_COMMITTER_*, or HOME's config)."""
    if run_git(["rev-parse", "--is-inside-work-tree"], cwd=root, environ=environ).returncode != 0:
        raise ConfigError("--commit: the config folder is not in a git repository", path=str(root))
    for step in (["add", "--", *files], ["commit", "--no-verify", "-m", message, "--", *files]):
        done = run_git(step, cwd=root, environ=environ)
        if done.returncode != 0:
            raise ConfigError(f"--commit: git {step[0]} failed: {(done.stderr or done.stdout).strip()[:500]}")
    return run_git(["rev-parse", "HEAD"], cwd=root, environ=environ).stdout.strip()
