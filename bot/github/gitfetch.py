"""Make a commit present in the checkout: actions/checkout fetches one commit by default, so a pull request's base
is usually missing. Fetched shallowly from the remote the checkout used, with the token as actions/checkout sends
it (an HTTP header, never in the URL, never printed)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from bot.base.errors import ConfigError
from bot.base.git import Git, git_environment, token_header
from bot.base.secrets import scrub

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_TIMEOUT_S = 300


def has_commit(git: Git, sha: str) -> bool:
    return git.run("cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def ensure_commit(
    git: Git,
    sha: str,
    *,
    token: str | None,
    remote: str = "origin",
    environ: Mapping[str, str] | None = None,
) -> bool:
    """Fetch `sha` (depth 1) from `remote` unless the checkout has it; True when a fetch was needed. A
    ConfigError says how to fix the workflow when it cannot be had. `git` is the checkout's repository; the
    fetch that carries the token runs with `environ`'s git variables only."""
    if not _SHA.match(sha):
        raise ConfigError(f"not a commit sha: {sha!r}")
    if has_commit(git, sha):
        return False
    url = git.run("remote", "get-url", remote)
    if url.returncode != 0:
        raise ConfigError(
            f"the base commit {sha[:12]} is not in the checkout and it has no remote `{remote}` "
            "to fetch it from: use actions/checkout with fetch-depth: 0"
        )
    fetcher = replace(git, timeout=max(git.timeout, _TIMEOUT_S))
    if token and url.stdout.strip().startswith(("https://", "http://")):
        fetcher = replace(fetcher, env={**git_environment(environ), **token_header(token)})
    done = fetcher.run("fetch", "--no-tags", "--no-recurse-submodules", "--depth=1", remote, sha)
    if done.returncode != 0 or not has_commit(git, sha):
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        detail_text = scrub(detail[0], (token,)) if token else detail[0]
        raise ConfigError(
            f"cannot fetch the base commit {sha[:12]} from `{remote}`: {detail_text[:300]} "
            "(give the job `contents: read`, or use actions/checkout with fetch-depth: 0)"
        )
    return True


def checkout_commit(git: Git) -> tuple[str, tuple[str, ...]]:
    """The checkout's HEAD and its parents, read from the commit object itself (`git cat-file -p`), so a
    depth-1 checkout, whose parents are not there, still names them."""
    head = git.run("rev-parse", "--verify", "HEAD^{commit}")
    body = git.run("cat-file", "-p", "HEAD")
    if head.returncode != 0 or body.returncode != 0:
        raise ConfigError(f"{git.cwd} is not a git checkout: run actions/checkout before sqlcanary")
    parents = []
    for line in body.stdout.splitlines():
        if not line:  # the headers end at the first blank line
            break
        if line.startswith("parent "):
            parents.append(line.removeprefix("parent ").strip())
    return head.stdout.strip(), tuple(parents)


def verify_checkout(git: Git, head_sha: str) -> str:
    """The commit that is evaluated, when it is the pull request's head `head_sha`: the checkout's HEAD, or
    the merge commit GitHub makes for the pull request (refs/pull/N/merge, what actions/checkout takes by
    default), whose second parent is the head. Anything else is a ConfigError naming both commits: the check
    run would report on a commit that was not evaluated."""
    head, parents = checkout_commit(git)
    if head == head_sha or (len(parents) == 2 and parents[1] == head_sha):
        return head
    merge = f" (a merge of {' and '.join(p[:12] for p in parents)})" if len(parents) > 1 else ""
    raise ConfigError(
        f"the checkout is commit {head}{merge}, but the event's pull_request.head.sha is {head_sha}: check out "
        "the pull request's head or its merge commit (actions/checkout does by default), so that the commit "
        "reported is the commit evaluated"
    )
