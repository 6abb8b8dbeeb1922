"""Handlers of tests/support/fake_github.py for what a repair pull request needs: branches and git refs, pull
requests (create, update, list by head), labels. Registered into `fake_github_state.HANDLERS` on import."""

from __future__ import annotations

from typing import Any

from tests.support.fake_github_state import (
    Answer,
    Call,
    FakeState,
    RepoState,
    _new_pull,
    _paginate,
    error,
    handles,
    now,
)


def _ref_json(call: Call, repo: RepoState, branch: str) -> dict[str, Any]:
    sha = repo.branches[branch]
    return {
        "ref": f"refs/heads/{branch}",
        "node_id": f"REF_{branch}",
        "url": f"{call.base_url}/repos/{repo.full_name}/git/refs/heads/{branch}",
        "object": {
            "sha": sha,
            "type": "commit",
            "url": f"{call.base_url}/repos/{repo.full_name}/git/commits/{sha}",
        },
    }


def _branch_name(ref: str) -> str | None:
    ref = ref.removeprefix("refs/")
    return ref.removeprefix("heads/") if ref.startswith("heads/") else None


@handles("repos/get-branch")
def _get_branch(state: FakeState, repo: RepoState, call: Call) -> Answer:
    name = call.path_params["branch"]
    if name not in repo.branches:
        return error(404, "Branch not found")
    sha = repo.branches[name]
    commit = {"sha": sha, "url": f"{call.base_url}/repos/{repo.full_name}/commits/{sha}"}
    return Answer(
        200,
        {
            "name": name,
            "commit": commit,
            "protected": False,
            "_links": {
                "self": f"{call.base_url}/repos/{repo.full_name}/branches/{name}",
                "html": f"{call.base_url}/{repo.full_name}/tree/{name}",
            },
        },
    )


@handles("git/get-ref")
def _get_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    branch = _branch_name(call.path_params["ref"])
    if branch is None or branch not in repo.branches:
        return error(404, "Not Found")
    return Answer(200, _ref_json(call, repo, branch))


@handles("git/list-matching-refs")
def _matching_refs(state: FakeState, repo: RepoState, call: Call) -> Answer:
    prefix = call.path_params["ref"].removeprefix("heads/")
    return Answer(200, [_ref_json(call, repo, b) for b in sorted(repo.branches) if b.startswith(prefix)])


@handles("git/create-ref")
def _create_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    branch = _branch_name(call.body["ref"])
    if branch is None or not call.body["ref"].startswith("refs/"):
        return error(422, "Reference name must start with 'refs/heads/' in this fake")
    if branch in repo.branches:
        return error(422, "Reference already exists")
    repo.branches[branch] = call.body["sha"]
    return Answer(201, _ref_json(call, repo, branch))


@handles("git/update-ref")
def _update_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    branch = _branch_name(call.path_params["ref"])
    if branch is None or branch not in repo.branches:
        return error(422, "Reference does not exist")
    repo.branches[branch] = call.body["sha"]
    for pull in repo.pulls.values():
        if pull["head"]["ref"] == branch and pull["state"] == "open":
            pull["head"]["sha"] = call.body["sha"]
    return Answer(200, _ref_json(call, repo, branch))


@handles("git/delete-ref")
def _delete_ref(state: FakeState, repo: RepoState, call: Call) -> Answer:
    branch = _branch_name(call.path_params["ref"])
    if branch is None or repo.branches.pop(branch, None) is None:
        return error(422, "Reference does not exist")
    return Answer(204)


@handles("pulls/list")
def _list_pulls(state: FakeState, repo: RepoState, call: Call) -> Answer:
    wanted = call.query.get("state", "open")
    found = [p for p in repo.pulls.values() if wanted == "all" or p["state"] == wanted]
    if "head" in call.query:  # "owner:branch"
        found = [p for p in found if p["head"]["label"] == call.query["head"]]
    if "base" in call.query:
        found = [p for p in found if p["base"]["ref"] == call.query["base"]]
    return _paginate(call, found, f"/repos/{repo.full_name}/pulls")


@handles("pulls/create")
def _create_pull(state: FakeState, repo: RepoState, call: Call) -> Answer:
    head, base = call.body["head"].split(":")[-1], call.body["base"]
    if head not in repo.branches or base not in repo.branches:
        return error(422, "Validation Failed: head or base branch does not exist")
    label = f"{repo.owner}:{head}"
    if any(
        p["head"]["label"] == label and p["base"]["ref"] == base and p["state"] == "open"
        for p in repo.pulls.values()
    ):
        return error(422, f"A pull request already exists for {label}.")
    number, repo.next_number = repo.next_number, repo.next_number + 1
    pull = _new_pull(
        call.base_url,
        repo,
        number,
        call.body,
        call.login,
        head_sha=repo.branches[head],
        base_sha=repo.branches[base],
    )
    repo.pulls[number] = pull
    return Answer(201, pull)


@handles("pulls/get")
def _get_pull(state: FakeState, repo: RepoState, call: Call) -> Answer:
    pull = repo.pulls.get(int(call.path_params["pull_number"]))
    return Answer(200, pull) if pull else error(404, "Not Found")


@handles("pulls/update")
def _update_pull(state: FakeState, repo: RepoState, call: Call) -> Answer:
    pull = repo.pulls.get(int(call.path_params["pull_number"]))
    if pull is None:
        return error(404, "Not Found")
    for key in ("title", "body", "state", "maintainer_can_modify"):
        if key in call.body:
            pull[key] = call.body[key]
    if "base" in call.body:
        pull["base"]["ref"] = call.body["base"]
    pull["updated_at"] = now()
    return Answer(200, pull)


@handles("repos/list-pull-requests-associated-with-commit")
def _pulls_for_commit(state: FakeState, repo: RepoState, call: Call) -> Answer:
    sha = call.path_params["commit_sha"]
    return Answer(200, [p for p in repo.pulls.values() if p["head"]["sha"] == sha])


def _label_json(call: Call, repo: RepoState, name: str) -> dict[str, Any]:
    return repo.labels.setdefault(
        name,
        {
            "id": abs(hash(name)) % 10**6,
            "node_id": f"L_{name}",
            "name": name,
            "color": "ededed",
            "description": None,
            "default": False,
            "url": f"{call.base_url}/repos/{repo.full_name}/labels/{name}",
        },
    )


@handles("issues/create-label")
def _create_label(state: FakeState, repo: RepoState, call: Call) -> Answer:
    if call.body["name"] in repo.labels:
        return error(422, "Validation Failed: label already_exists")
    label = _label_json(call, repo, call.body["name"])
    label.update(color=call.body.get("color", "ededed"), description=call.body.get("description"))
    return Answer(201, label)


@handles("issues/add-labels")
def _add_labels(state: FakeState, repo: RepoState, call: Call) -> Answer:
    number = int(call.path_params["issue_number"])
    body = call.body
    names = body if isinstance(body, list) else body.get("labels", [])
    names = [n if isinstance(n, str) else n["name"] for n in names]
    current = repo.issue_labels.setdefault(number, [])
    current += [n for n in names if n not in current]
    labels = [_label_json(call, repo, n) for n in current]
    if number in repo.pulls:  # a pull request's JSON carries its labels
        repo.pulls[number]["labels"] = labels
    return Answer(200, labels)


@handles("issues/list-labels-on-issue")
def _list_issue_labels(state: FakeState, repo: RepoState, call: Call) -> Answer:
    number = int(call.path_params["issue_number"])
    labels = [_label_json(call, repo, n) for n in repo.issue_labels.get(number, [])]
    return _paginate(call, labels, f"/repos/{repo.full_name}/issues/{number}/labels")


@handles("issues/remove-label")
def _remove_label(state: FakeState, repo: RepoState, call: Call) -> Answer:
    number = int(call.path_params["issue_number"])
    current = repo.issue_labels.get(number, [])
    if call.path_params["name"] not in current:
        return error(404, "Label does not exist")
    current.remove(call.path_params["name"])
    labels = [_label_json(call, repo, n) for n in current]
    if number in repo.pulls:
        repo.pulls[number]["labels"] = labels
    return Answer(200, labels)
