"""The git object operations of tests/support/fake_github.py (blobs, trees, commits, compare) on the bare
repository tests/support/fake_github_git.py attaches: `git hash-object -w`, `read-tree`/`update-index`/
`write-tree` in a temporary index, `commit-tree`, `rev-list` and `diff --raw`."""

from __future__ import annotations

import base64
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.support.fake_github_git import GitFailed, commit_json, git, kind, need_git, person
from tests.support.fake_github_state import Answer, Call, FakeState, RepoState, _user, error, handles


@handles("git/create-blob")
def _create_blob(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    content = call.body["content"]
    data = base64.b64decode(content) if call.body.get("encoding") == "base64" else content.encode("utf-8")
    sha = git(gd, "hash-object", "-w", "--stdin", stdin=data)
    return Answer(201, {"sha": sha, "url": f"{call.base_url}/repos/{repo.full_name}/git/blobs/{sha}"})


@handles("git/get-blob")
def _get_blob(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    sha = call.path_params["file_sha"]
    if kind(gd, sha) != "blob":
        return error(404, "Not Found")
    data = subprocess.run(["git", "cat-file", "blob", sha], cwd=gd, capture_output=True, check=True).stdout
    return Answer(
        200,
        {
            "sha": sha,
            "node_id": f"B_{sha}",
            "size": len(data),
            "encoding": "base64",
            "content": base64.b64encode(data).decode(),
            "url": f"{call.base_url}/repos/{repo.full_name}/git/blobs/{sha}",
        },
    )


def _tree_json(repo: RepoState, call: Call, sha: str, recursive: bool) -> dict[str, Any]:
    gd = need_git(repo)
    out = git(gd, "ls-tree", "-l", *(["-r", "-t"] if recursive else []), sha)
    api = f"{call.base_url}/repos/{repo.full_name}/git"
    entries = []
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        mode, kind, obj, size = meta.split()
        entry = {"path": path, "mode": mode, "type": kind, "sha": obj, "url": f"{api}/{kind}s/{obj}"}
        entries.append(entry | ({"size": int(size)} if kind == "blob" else {}))
    return {"sha": sha, "url": f"{api}/trees/{sha}", "tree": entries, "truncated": False}


@handles("git/create-tree")
def _create_tree(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    base = call.body.get("base_tree")
    if base and kind(gd, base) != "tree":
        return error(422, "base_tree is not a valid tree oid")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(gd, "read-tree", *([base] if base else ["--empty"]), env=env)
        for entry in call.body["tree"]:
            path, mode = entry["path"], entry.get("mode", "100644")
            if entry.get("type", "blob") != "blob" or "path" not in entry:
                return error(422, "the fake writes blob entries only")
            if "content" in entry and "sha" in entry:
                return error(422, "tree.sha and content cannot both be given")
            if entry.get("sha", "") is None:
                git(gd, "update-index", "--force-remove", path, env=env)
                continue
            sha = entry.get("sha") or git(gd, "hash-object", "-w", "--stdin", stdin=entry["content"].encode())
            if kind(gd, sha) != "blob":
                return error(422, f"tree.sha {sha} is not a valid blob")
            git(gd, "update-index", "--add", "--cacheinfo", f"{mode},{sha},{path}", env=env)
        tree = git(gd, "write-tree", env=env)
    return Answer(201, _tree_json(repo, call, tree, recursive=False))


@handles("git/get-tree")
def _get_tree(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    sha = call.path_params["tree_sha"]
    if kind(gd, f"{sha}^{{tree}}") != "tree":
        return error(404, "Not Found")
    sha = git(gd, "rev-parse", f"{sha}^{{tree}}")
    return Answer(200, _tree_json(repo, call, sha, recursive="recursive" in call.query))


@handles("git/create-commit")
def _create_commit(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    body = call.body
    if kind(gd, body["tree"]) != "tree":
        return error(422, "Tree SHA does not exist")
    parents = body.get("parents", [])
    if any(kind(gd, p) != "commit" for p in parents):
        return error(422, "Parent SHA does not exist or is not a commit object")
    me = _user(call.login)
    author = body.get("author") or {
        "name": call.login,
        "email": f"{me['id']}+{call.login}@users.noreply.github.com",
    }
    committer = body.get("committer") or author
    env = {
        "GIT_AUTHOR_NAME": author["name"],
        "GIT_AUTHOR_EMAIL": author["email"],
        "GIT_COMMITTER_NAME": committer["name"],
        "GIT_COMMITTER_EMAIL": committer["email"],
    }
    if author.get("date"):
        env["GIT_AUTHOR_DATE"] = author["date"]
    args = [item for p in parents for item in ("-p", p)]
    sha = git(gd, "commit-tree", body["tree"], *args, "-F", "-", stdin=body["message"].encode(), env=env)
    return Answer(201, commit_json(state, repo, call, sha))


@handles("git/get-commit")
def _get_commit(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    sha = call.path_params["commit_sha"]
    if kind(gd, sha) != "commit":
        return error(404, "Not Found")
    return Answer(200, commit_json(state, repo, call, sha))


@handles("repos/compare-commits-with-basehead")
def _compare(state: FakeState, repo: RepoState, call: Call) -> Answer:
    gd = need_git(repo)
    base_name, sep, head_name = call.path_params["basehead"].partition("...")
    if not sep:
        return error(404, "Not Found")
    try:
        base = git(gd, "rev-parse", "--verify", f"{base_name}^{{commit}}")
        head = git(gd, "rev-parse", "--verify", f"{head_name}^{{commit}}")
        merge_base = git(gd, "merge-base", base, head)
    except GitFailed:
        return error(404, "Not Found")
    ahead = git(gd, "rev-list", "--reverse", "--topo-order", head, f"^{base}").split()
    behind = git(gd, "rev-list", base, f"^{head}").split()
    status = (
        "identical"
        if not ahead and not behind
        else "diverged"
        if ahead and behind
        else ("ahead" if ahead else "behind")
    )
    commits = []
    for sha in ahead:
        raw = commit_json(state, repo, call, sha)
        commits.append(
            {
                "sha": sha,
                "node_id": raw["node_id"],
                "url": f"{call.base_url}/repos/{repo.full_name}/commits/{sha}",
                "html_url": raw["html_url"],
                "author": person(state, raw["author"]),
                "committer": person(state, raw["committer"]),
                "parents": raw["parents"],
                "commit": {
                    k: raw[k] for k in ("author", "committer", "message", "tree", "url", "verification")
                }
                | {"comment_count": 0},
            }
        )
    files = []
    for line in git(gd, "diff", "--raw", "--no-renames", merge_base, head).splitlines():
        meta, _, path = line.partition("\t")
        new_sha, letter = meta.split()[3], meta.split()[4]
        status_name = {"A": "added", "D": "removed", "M": "modified"}.get(letter, "changed")
        files.append(
            {
                "sha": new_sha,
                "filename": path,
                "status": status_name,
                "additions": 0,
                "deletions": 0,
                "changes": 0,
                "blob_url": "",
                "raw_url": "",
                "contents_url": "",
            }
        )
    api = f"{call.base_url}/repos/{repo.full_name}"
    return Answer(
        200,
        {
            "url": f"{api}/compare/{base_name}...{head_name}",
            "html_url": f"{call.base_url}/{repo.full_name}/compare/{base_name}...{head_name}",
            "permalink_url": f"{call.base_url}/{repo.full_name}/compare/{base}...{head}",
            "diff_url": "",
            "patch_url": "",
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": len(behind),
            "total_commits": len(ahead),
            "commits": commits,
            "files": files,
            "base_commit": {"sha": base},
            "merge_base_commit": {"sha": merge_base},
        },
    )
