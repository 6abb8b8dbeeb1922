"""The git side of tests/support/fake_github.py (its object operations: fake_github_git_objects.py), backed by a real bare repository: blobs, trees, commits, refs
and compare go through `git hash-object -w`, `read-tree`/`update-index`/`write-tree`, `commit-tree` and
`update-ref`, so a test reads what the bot wrote with real git, and a push to the same bare repository (a
person's commit, the bot's `git push` fallback through tests/support/git_http.py) is seen by the API.

    attach_git(fake.state, "acme/agent", tmp_path / "acme" / "agent.git")

Without `attach_git` a repository keeps the fake's plain `branches` dict (any 40-hex sha) and these operations
answer 404. Commit authors map to logins as GitHub maps a noreply address (`<id>+<login>@users.noreply.github.com`)
or an address in `FakeState.emails`; any other author has no login (`author: null`), as an unknown email does."""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support import fake_github_repo_ops  # noqa: F401  (registers the plain ref handlers wrapped here)
from tests.support.fake_github_state import (
    HANDLERS,
    Answer,
    Call,
    FakeState,
    RepoState,
    _user,
    error,
    handles,
)

_NOREPLY = re.compile(r"^(?:\d+\+)?([^@]+)@users\.noreply\.github\.com$")


class GitFailed(Exception):
    pass


def attach_git(state: FakeState, full_name: str, git_dir: Path) -> RepoState:
    """Back `full_name` (added when missing) by the bare repository `git_dir`; its branches come from there."""
    if full_name.lower() not in state.repos:
        state.add_repo(full_name)
    repo = state.repo(full_name)
    repo.git_dir = git_dir
    refresh(repo)
    return repo


def git_dir(repo: RepoState) -> Path | None:
    return repo.git_dir


def git(repo_dir: Path, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo_dir,
        input=stdin,
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise GitFailed(done.stderr.decode(errors="replace").strip())
    return done.stdout.decode().strip()


def kind(gd: Path, sha: str) -> str | None:
    try:
        return git(gd, "cat-file", "-t", sha)
    except GitFailed:
        return None


# ---- refs: the bare repository is the truth; the fake's `branches` dict mirrors it around each request ---------
def refresh(repo: RepoState) -> None:
    """Load the branches from the bare repository (a push may have moved them) into `repo.branches`."""
    gd = git_dir(repo)
    if gd is None:
        return
    out = git(gd, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads")
    repo.branches = dict(line.split(" ", 1) for line in out.splitlines() if line)
    for pull in repo.pulls.values():
        head = pull["head"]["ref"]
        if pull["state"] == "open" and head in repo.branches:
            pull["head"]["sha"] = repo.branches[head]


def persist(repo: RepoState) -> None:
    """Write the branches a handler changed in `repo.branches` back to the bare repository."""
    gd = git_dir(repo)
    if gd is None:
        return
    out = git(gd, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads")
    stored = dict(line.split(" ", 1) for line in out.splitlines() if line)
    for name, sha in repo.branches.items():
        if stored.get(name) != sha:
            git(gd, "update-ref", f"refs/heads/{name}", sha)
    for name in set(stored) - set(repo.branches):
        git(gd, "update-ref", "-d", f"refs/heads/{name}")


_plain_create_ref = HANDLERS["git/create-ref"]
_plain_update_ref = HANDLERS["git/update-ref"]


@handles("git/create-ref")
def _create_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = git_dir(repo)
    if gd is not None and kind(gd, call.body["sha"]) != "commit":
        return error(422, "Object does not exist")
    return _plain_create_ref(state, repo, call)


@handles("git/update-ref")
def _update_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = git_dir(repo)
    if gd is not None:
        new = call.body["sha"]
        if kind(gd, new) != "commit":
            return error(422, "Object does not exist")
        old = repo.branches.get(call.path_params["ref"].removeprefix("refs/").removeprefix("heads/"))
        forward = (
            old is None
            or subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=gd).returncode == 0
        )
        if not call.body.get("force") and not forward:
            return error(422, "Update is not a fast forward")
    return _plain_update_ref(state, repo, call)


# ---- commits as the API shows them -----------------------------------------------------------------------------------------------
def need_git(repo: RepoState) -> Path:
    gd = git_dir(repo)
    if gd is None:
        raise GitFailed("this fake repository has no git objects (use attach_git)")
    return gd


def login_for(state: FakeState, email: str) -> str | None:
    found = _NOREPLY.match(email)
    return found.group(1) if found else state.emails.get(email)


def person(state: FakeState, who: dict[str, str]) -> dict[str, Any] | None:
    login = login_for(state, who["email"])
    return _user(login) if login else None


def commit_json(state: FakeState, repo: RepoState, call: Call, sha: str) -> dict[str, Any]:
    gd = need_git(repo)
    raw = git(gd, "cat-file", "commit", sha)
    head, _, message = raw.partition("\n\n")
    tree, parents, people = "", [], {}
    for line in head.splitlines():
        key, _, value = line.partition(" ")
        if key == "tree":
            tree = value
        elif key == "parent":
            parents.append(value)
        elif key in ("author", "committer"):
            found = re.match(r"^(.*) <(.*)> (\d+) ([+-]\d{4})$", value)
            assert found, value
            when = datetime.fromtimestamp(int(found.group(3)), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            people[key] = {"name": found.group(1), "email": found.group(2), "date": when}
    api = f"{call.base_url}/repos/{repo.full_name}"
    return {
        "sha": sha,
        "node_id": f"C_{sha}",
        "url": f"{api}/git/commits/{sha}",
        "html_url": f"{call.base_url}/{repo.full_name}/commit/{sha}",
        "message": message.rstrip("\n"),
        "author": people["author"],
        "committer": people["committer"],
        "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
        "parents": [
            {
                "sha": p,
                "url": f"{api}/git/commits/{p}",
                "html_url": f"{call.base_url}/{repo.full_name}/commit/{p}",
            }
            for p in parents
        ],
        "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None},
    }
