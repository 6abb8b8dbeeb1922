"""The state behind tests/support/fake_github.py: repositories, pull requests, issue comments, check runs with
their annotations, commit statuses, refs and labels, and one handler per OpenAPI operationId.

Handlers take a `Call` (already routed and validated) and return an `Answer`. URLs in answers are built from the
server's own base URL, as PyGithub refuses to follow URLs on another host or port."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Call:
    base_url: str
    login: str
    path_params: dict[str, str]
    query: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def error(status: int, message: str) -> Answer:
    return Answer(status, {"message": message, "documentation_url": "https://docs.github.com/rest"})


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RepoState:
    owner: str
    name: str
    default_branch: str = "main"
    branches: dict[str, str] = field(default_factory=dict)  # name -> sha
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    issue_labels: dict[int, list[str]] = field(default_factory=dict)
    next_number: int = 1
    git_dir: Path | None = None  # the bare repository behind its git data (fake_github_git)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


def _user(login: str) -> dict[str, Any]:
    kind = "Bot" if login.endswith("[bot]") else "User"
    return {"login": login, "id": abs(hash(login)) % 10**8, "type": kind, "node_id": f"U_{login}"}


class FakeState:
    def __init__(self) -> None:
        self.repos: dict[str, RepoState] = {}
        # commit author email -> login, for fake_github_git (noreply addresses map without an entry)
        self.emails: dict[str, str] = {}
        self._ids = itertools.count(1000)

    def next_id(self) -> int:
        return next(self._ids)

    # ---- seeding helpers for tests -------------------------------------------------------------------------
    def add_repo(self, full_name: str, *, default_branch: str = "main", sha: str = "0" * 40) -> RepoState:
        owner, name = full_name.split("/")
        repo = RepoState(owner, name, default_branch, branches={default_branch: sha})
        self.repos[full_name.lower()] = repo
        return repo

    def repo(self, full_name: str) -> RepoState:
        return self.repos[full_name.lower()]

    def add_pull(
        self,
        base_url: str,
        full_name: str,
        *,
        head: str,
        head_sha: str,
        base: str = "",
        base_sha: str = "0" * 40,
        author: str = "octocat",
        head_repo: str = "",
    ) -> dict[str, Any]:
        repo = self.repo(full_name)
        number, repo.next_number = repo.next_number, repo.next_number + 1
        repo.branches.setdefault(head, head_sha)
        body = {"title": f"PR {number}", "head": head, "base": base or repo.default_branch, "body": ""}
        pull = _new_pull(base_url, repo, number, body, author, head_sha=head_sha, base_sha=base_sha)
        if head_repo:
            pull["head"]["repo"] = _repo_json(base_url, head_repo)
            pull["head"]["label"] = f"{head_repo.split('/')[0]}:{head}"
        repo.pulls[number] = pull
        return pull

    def add_comment(
        self, base_url: str, full_name: str, number: int, body: str, *, author: str
    ) -> dict[str, Any]:
        return _new_comment(base_url, self, self.repo(full_name), number, body, author)


def _repo_json(base_url: str, full_name: str, default_branch: str = "main") -> dict[str, Any]:
    owner, name = full_name.split("/")
    return {
        "id": abs(hash(full_name)) % 10**8,
        "node_id": f"R_{full_name}",
        "name": name,
        "full_name": full_name,
        "owner": _user(owner),
        "private": False,
        "fork": False,
        "visibility": "public",
        "url": f"{base_url}/repos/{full_name}",
        "html_url": f"{base_url}/{full_name}",
        "default_branch": default_branch,
    }


def _new_comment(
    base: str, state: FakeState, repo: RepoState, number: int, body: str, login: str
) -> dict[str, Any]:
    cid = state.next_id()
    comment = {
        "id": cid,
        "node_id": f"IC_{cid}",
        "body": body,
        "user": _user(login),
        "issue_number": number,
        "url": f"{base}/repos/{repo.full_name}/issues/comments/{cid}",
        "html_url": f"{base}/{repo.full_name}/pull/{number}#issuecomment-{cid}",
        "issue_url": f"{base}/repos/{repo.full_name}/issues/{number}",
        "created_at": now(),
        "updated_at": now(),
        "author_association": "NONE",
    }
    repo.comments[cid] = comment
    return comment


def _branch(base: str, repo: RepoState, name: str, sha: str, repo_name: str = "") -> dict[str, Any]:
    full = repo_name or repo.full_name
    return {
        "ref": name,
        "sha": sha,
        "label": f"{full.split('/')[0]}:{name}",
        "user": _user(full.split("/")[0]),
        "repo": _repo_json(base, full, repo.default_branch),
    }


def _new_pull(
    base: str, repo: RepoState, number: int, body: dict[str, Any], login: str, *, head_sha: str, base_sha: str
) -> dict[str, Any]:
    head_name = body["head"].split(":")[-1]
    return {
        "id": 10**6 + number,
        "node_id": f"PR_{number}",
        "number": number,
        "state": "open",
        "title": body.get("title", ""),
        "body": body.get("body") or "",
        "draft": bool(body.get("draft", False)),
        "user": _user(login),
        "labels": [],
        "merged": False,
        "maintainer_can_modify": False,
        "url": f"{base}/repos/{repo.full_name}/pulls/{number}",
        "html_url": f"{base}/{repo.full_name}/pull/{number}",
        "issue_url": f"{base}/repos/{repo.full_name}/issues/{number}",
        "head": _branch(base, repo, head_name, head_sha),
        "base": _branch(base, repo, body["base"], base_sha),
        "created_at": now(),
        "updated_at": now(),
    }


def _check_run_json(call: Call, repo: RepoState, run: dict[str, Any]) -> dict[str, Any]:
    rid = run["id"]
    output = dict(run.get("output") or {})
    output.pop("annotations", None)
    output |= {
        "annotations_count": len(repo.annotations[rid]),
        "annotations_url": f"{call.base_url}/repos/{repo.full_name}/check-runs/{rid}/annotations",
    }
    return run | {"output": output}


def _paginate(call: Call, items: list[Any], path: str) -> Answer:
    per_page = min(int(call.query.get("per_page", 30)), 100)
    page = int(call.query.get("page", 1))
    last = max(1, -(-len(items) // per_page))
    headers = {}
    if page < last:
        link = f"{call.base_url}{path}?per_page={per_page}&page="
        headers["Link"] = f'<{link}{page + 1}>; rel="next", <{link}{last}>; rel="last"'
    return Answer(200, items[(page - 1) * per_page : page * per_page], headers)


Handler = Callable[[FakeState, RepoState, Call], Answer]
HANDLERS: dict[str, Handler] = {}


def handles(operation_id: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[operation_id] = fn
        return fn

    return register


@handles("repos/get")
def _get_repo(state: FakeState, repo: RepoState, call: Call) -> Answer:
    return Answer(200, _repo_json(call.base_url, repo.full_name, repo.default_branch))


@handles("issues/list-comments")
def _list_comments(state: FakeState, repo: RepoState, call: Call) -> Answer:
    number = int(call.path_params["issue_number"])
    found = [c for c in repo.comments.values() if c["issue_number"] == number]
    return _paginate(call, found, f"/repos/{repo.full_name}/issues/{number}/comments")


@handles("issues/create-comment")
def _create_comment(state: FakeState, repo: RepoState, call: Call) -> Answer:
    number = int(call.path_params["issue_number"])
    if number not in repo.pulls:
        return error(404, "Not Found")
    return Answer(201, _new_comment(call.base_url, state, repo, number, call.body["body"], call.login))


@handles("issues/get-comment")
def _get_comment(state: FakeState, repo: RepoState, call: Call) -> Answer:
    comment = repo.comments.get(int(call.path_params["comment_id"]))
    return Answer(200, comment) if comment else error(404, "Not Found")


@handles("issues/update-comment")
def _update_comment(state: FakeState, repo: RepoState, call: Call) -> Answer:
    comment = repo.comments.get(int(call.path_params["comment_id"]))
    if comment is None:
        return error(404, "Not Found")
    comment.update(body=call.body["body"], updated_at=now())
    return Answer(200, comment)


@handles("issues/delete-comment")
def _delete_comment(state: FakeState, repo: RepoState, call: Call) -> Answer:
    found = repo.comments.pop(int(call.path_params["comment_id"]), None)
    return Answer(204) if found else error(404, "Not Found")


@handles("checks/create")
def _create_check_run(state: FakeState, repo: RepoState, call: Call) -> Answer:
    rid = state.next_id()
    body = call.body
    status = "completed" if body.get("conclusion") else body.get("status", "queued")
    run = {
        "id": rid,
        "node_id": f"CR_{rid}",
        "name": body["name"],
        "head_sha": body["head_sha"],
        "status": status,
        "conclusion": body.get("conclusion"),
        "external_id": body.get("external_id", ""),
        "details_url": body.get("details_url"),
        "started_at": body.get("started_at", now()),
        "completed_at": body.get("completed_at", now() if status == "completed" else None),
        "url": f"{call.base_url}/repos/{repo.full_name}/check-runs/{rid}",
        "html_url": f"{call.base_url}/{repo.full_name}/runs/{rid}",
        "output": body.get("output") or {"title": None, "summary": None, "text": None},
        "check_suite": {"id": 1},
        "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
        "pull_requests": [],
        "created_by": call.login,
    }
    repo.check_runs[rid] = run
    repo.annotations[rid] = list((body.get("output") or {}).get("annotations", []))
    return Answer(201, _check_run_json(call, repo, run))


@handles("checks/update")
def _update_check_run(state: FakeState, repo: RepoState, call: Call) -> Answer:
    rid = int(call.path_params["check_run_id"])
    run = repo.check_runs.get(rid)
    if run is None:
        return error(404, "Not Found")
    body = dict(call.body)
    if "output" in body:
        output = dict(body.pop("output"))
        repo.annotations[rid] += output.pop("annotations", [])  # GitHub appends annotations on every PATCH
        run["output"] = {k: v for k, v in run["output"].items() if k != "annotations"} | output
    if body.get("conclusion"):
        body.setdefault("status", "completed")
    run.update(body)
    return Answer(200, _check_run_json(call, repo, run))


@handles("checks/get")
def _get_check_run(state: FakeState, repo: RepoState, call: Call) -> Answer:
    run = repo.check_runs.get(int(call.path_params["check_run_id"]))
    return Answer(200, _check_run_json(call, repo, run)) if run else error(404, "Not Found")


@handles("checks/list-annotations")
def _list_annotations(state: FakeState, repo: RepoState, call: Call) -> Answer:
    rid = int(call.path_params["check_run_id"])
    if rid not in repo.check_runs:
        return error(404, "Not Found")
    items = [
        {"start_column": None, "end_column": None, "title": None, "raw_details": None, "blob_href": ""} | a
        for a in repo.annotations[rid]
    ]
    return _paginate(call, items, f"/repos/{repo.full_name}/check-runs/{rid}/annotations")


@handles("checks/list-for-ref")
def _list_check_runs_for_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    ref = call.path_params["ref"]
    sha = repo.branches.get(ref, ref)
    runs = [_check_run_json(call, repo, r) for r in repo.check_runs.values() if r["head_sha"] == sha]
    if "check_name" in call.query:
        runs = [r for r in runs if r["name"] == call.query["check_name"]]
    return Answer(200, {"total_count": len(runs), "check_runs": runs})


@handles("repos/create-commit-status")
def _create_status(state: FakeState, repo: RepoState, call: Call) -> Answer:
    sid = state.next_id()
    status = {
        "id": sid,
        "node_id": f"S_{sid}",
        "sha": call.path_params["sha"],
        "state": call.body["state"],
        "description": call.body.get("description"),
        "target_url": call.body.get("target_url"),
        "context": call.body.get("context", "default"),
        "creator": _user(call.login),
        "url": f"{call.base_url}/repos/{repo.full_name}/statuses/{call.path_params['sha']}",
        "avatar_url": None,
        "created_at": now(),
        "updated_at": now(),
    }
    repo.statuses.append(status)
    return Answer(201, status)
