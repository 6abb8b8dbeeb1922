"""Make a commit present in the checkout: actions/checkout fetches one commit by default, so a pull request's base
is usually missing. Fetched shallowly from the remote the checkout used, with the token as actions/checkout sends
it (an HTTP header, never in the URL, never printed)."""

from __future__ import annotations

import base64
import re
import subprocess
from pathlib import Path

from bot.errors import ConfigError

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_TIMEOUT_S = 300


def _git(repo: Path, *args: str, config: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    extra = [item for c in config for item in ("-c", c)]
    return subprocess.run(["git", *extra, *args], cwd=repo, capture_output=True, text=True, timeout=_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def has_commit(repo: Path, sha: str) -> bool:
    return _git(repo, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


def ensure_commit(repo: Path, sha: str, *, token: str | None, remote: str = "origin") -> bool:
    """Fetch `sha` (depth 1) from `remote` unless the checkout has it; True when a fetch was needed. A
    ConfigError says how to fix the workflow when it cannot be had."""
    if not _SHA.match(sha):
        raise ConfigError(f"not a commit sha: {sha!r}")
    if has_commit(repo, sha):
        return False
    url = _git(repo, "remote", "get-url", remote)
    if url.returncode != 0:
        raise ConfigError(f"the base commit {sha[:12]} is not in the checkout and it has no remote `{remote}` "
                          "to fetch it from: use actions/checkout with fetch-depth: 0")  # fmt: skip
    config: tuple[str, ...] = ()
    if token and url.stdout.strip().startswith(("https://", "http://")):
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        config = (f"http.extraheader=AUTHORIZATION: basic {basic}",)
    done = _git(repo, "fetch", "--no-tags", "--no-recurse-submodules", "--depth=1", remote, sha, config=config)
    if done.returncode != 0 or not has_commit(repo, sha):
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        detail_text = detail[0].replace(token, "***") if token else detail[0]
        raise ConfigError(f"cannot fetch the base commit {sha[:12]} from `{remote}`: {detail_text[:300]} "
                          "(give the job `contents: read`, or use actions/checkout with fetch-depth: 0)")  # fmt: skip
    return True
