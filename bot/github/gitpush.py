"""The fallback when the git data API refuses: build the repair commit in a temporary bare repository that borrows
the checkout's objects (git alternates; the checkout itself, its index, HEAD and config are left as they were
found) and `git push --force-with-lease` it, with its own user.name/email.

The token travels as an `http.extraheader` set through git's GIT_CONFIG_COUNT environment variables: never in a
URL, a file or a command line (another process can read a command line, not a root process's environment), and
only for the remote's own host. git's error output is scrubbed of it before it is shown."""

from __future__ import annotations

import os
import subprocess
import tempfile
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.base.git import Git, git_environment, token_header
from bot.base.secrets import scrub
from bot.github.errors import GitHubApiError

_TIMEOUT_S = 300


class PushRejected(GitHubApiError):
    """The remote branch moved since it was read (the lease failed): someone else wrote it meanwhile."""


@dataclass(frozen=True)
class GitIdentity:
    name: str
    email: str


@dataclass(frozen=True)
class PushFallback:
    """How to push when the API refuses: the checkout, the token, and optionally the remote URL (default: the
    checkout's `origin`; an http(s) URL without credentials in it)."""

    workspace: Path
    token: str = field(repr=False)
    remote_url: str | None = None
    # git's environment besides what the push adds (GIT_DIR, the token as GIT_CONFIG_*): PATH and HOME of the
    # step's environment; nothing else of it reaches git.
    environ: Mapping[str, str] = field(default_factory=lambda: {"PATH": os.defpath}, repr=False)

    @property
    def git_environment(self) -> dict[str, str]:
        return git_environment(self.environ)


def bot_identity(login: str) -> GitIdentity:
    """The name and noreply email GitHub gives `login`'s commits, so that a pushed commit shows as the bot's."""
    if login == "github-actions[bot]":
        return GitIdentity(login, "41898282+github-actions[bot]@users.noreply.github.com")
    return GitIdentity(login, f"{login}@users.noreply.github.com")


def _remote(fallback: PushFallback) -> str:
    url = fallback.remote_url
    if url is None:
        git = Git(fallback.workspace, env=fallback.git_environment, timeout=_TIMEOUT_S)
        done = git.run("remote", "get-url", "origin")
        if done.returncode != 0:
            raise GitHubApiError(
                f"cannot push the repair branch: {fallback.workspace} has no remote `origin`"
            )
        url = done.stdout.strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GitHubApiError("cannot push the repair branch: the remote is not an http(s) URL")
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")  # credentials in a URL are dropped
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class LocalBranch:
    """A temporary bare repository on top of the checkout's objects, to build one commit and push it.

    with LocalBranch(fallback, head_sha) as local:
        tree = local.write_tree(files)
        sha = local.commit(tree, message, identity)
        local.push(sha, branch, expected=tip)"""

    def __init__(self, fallback: PushFallback, head_sha: str) -> None:
        self.fallback = fallback
        self.head_sha = head_sha
        self.url = _remote(fallback)
        self._tmp = tempfile.TemporaryDirectory(prefix="sqlcanary-push-")
        self.git_dir = Path(self._tmp.name) / "repo.git"

    def __enter__(self) -> LocalBranch:
        try:
            self._prepare()
        except BaseException:
            self._tmp.cleanup()
            raise
        return self

    def _prepare(self) -> None:
        made = Git(Path(self._tmp.name), env=self.fallback.git_environment).run(
            "init", "-q", "--bare", str(self.git_dir)
        )
        if made.returncode != 0:
            raise GitHubApiError(f"cannot prepare the repair branch: {made.stderr.strip()[:300]}")
        common = self._workspace_git("rev-parse", "--path-format=absolute", "--git-common-dir")
        if common:
            objects = Path(common) / "objects"
            (self.git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n")
            if (Path(common) / "shallow").is_file():  # a shallow checkout: say where its history stops
                (self.git_dir / "shallow").write_bytes((Path(common) / "shallow").read_bytes())
        if self._git("cat-file", "-e", f"{self.head_sha}^{{commit}}", check=False).returncode != 0:
            self._git("fetch", "-q", "--no-tags", "--depth=1", self.url, self.head_sha, auth=True)

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def write_tree(self, files: Mapping[str, str]) -> str:
        env = {"GIT_INDEX_FILE": str(Path(self._tmp.name) / "index")}
        self._git("read-tree", self.head_sha, env=env)
        for path, text in sorted(files.items()):
            blob = self._git("hash-object", "-w", "--stdin", stdin=text).stdout.strip()
            self._git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        return self._git("write-tree", env=env).stdout.strip()

    def commit(self, tree: str, message: str, identity: GitIdentity) -> str:
        env = {
            "GIT_AUTHOR_NAME": identity.name,
            "GIT_AUTHOR_EMAIL": identity.email,
            "GIT_COMMITTER_NAME": identity.name,
            "GIT_COMMITTER_EMAIL": identity.email,
        }
        return self._git(
            "commit-tree", tree, "-p", self.head_sha, "-F", "-", stdin=message, env=env
        ).stdout.strip()

    def push(self, sha: str, branch: str, *, expected: str | None) -> None:
        """Push `sha` to `branch` when the remote branch is still at `expected` (None: absent)."""
        ref = f"refs/heads/{branch}"
        lease = f"--force-with-lease={ref}:{expected or ''}"
        done = self._git("push", "--porcelain", lease, self.url, f"{sha}:{ref}", auth=True, check=False)
        if done.returncode != 0:
            detail = scrub((done.stderr + done.stdout).strip(), (self.fallback.token,))[-500:]
            if "stale info" in detail or "fetch first" in detail or "rejected" in detail:
                raise PushRejected(
                    f"git push to {branch} was rejected: the branch moved meanwhile ({detail})"
                )
            raise GitHubApiError(f"git push to {branch} failed: {detail}")

    # ---- git ----------------------------------------------------------------------------------------------
    def _workspace_git(self, *args: str) -> str:
        done = Git(self.fallback.workspace, env=self.fallback.git_environment, timeout=_TIMEOUT_S).run(*args)
        return done.stdout.strip() if done.returncode == 0 else ""

    def _git(
        self,
        *args: str,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        auth: bool = False,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**self.fallback.git_environment, "GIT_DIR": str(self.git_dir), "GIT_TERMINAL_PROMPT": "0"}
        full_env |= env or {}
        if auth:
            full_env |= self._auth_env()
        # input "" rather than the parent's stdin: git never waits on a terminal
        done = Git(Path(self._tmp.name), env=full_env, timeout=_TIMEOUT_S).run(*args, stdin=stdin or "")
        if check and done.returncode != 0:
            detail = scrub((done.stderr or done.stdout).strip(), (self.fallback.token,))[-500:]
            raise GitHubApiError(f"git {args[0]} for the repair branch failed: {detail}")
        return done

    def _auth_env(self) -> dict[str, str]:
        """The token for this remote's host only (bot.base.git.token_header)."""
        return token_header(self.fallback.token, url=self.url)
