"""Issue 23, item 6, through `action(...)`: the answer cache keys what actually ran. The base's config declares
`agent.inputs` that miss the file the agent answers from (`data/answers.json`). A pull request's first commit
answers every case right; its second commit breaks `names` through that file. With the cache folder carried from
the first run to the next (as `actions/cache` restores it), the second run asks the head's agent again and fails the
gate, instead of judging the first commit's answers; a re-run of the same commit takes them all from the cache, and
says so and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.base.results import read_run
from tests.integration.test_action import checkout, pr_action
from tests.support.fake_github import FakeGitHub
from tests.support.tinyrepo import CONFIG, GOOD, config, git, make_tiny_repo

pytestmark = pytest.mark.integration

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)

CACHE = ".sqlcanary/cache"
BROKEN = GOOD | {"names": "SELECT city FROM customers"}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """`main` (its config narrows `agent.inputs` to KB files the agent does not even read) on a bare remote."""
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)  # conftest turns it off for other tests
    monkeypatch.chdir(tmp_path)
    src = make_tiny_repo(tmp_path / "src")
    (src / CONFIG).write_text(config(["kb/**/*.yaml"]))
    git(src, "commit", "-qam", "narrow the agent's inputs")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(src, "remote", "add", "origin", str(bare))
    git(src, "push", "-q", "origin", "main")
    git(src, "checkout", "-q", "-b", "feature")
    return {"src": src, "url": bare.as_uri(), "main": git(src, "rev-parse", "HEAD"), "tmp": tmp_path}


def push(repo: dict, files: dict[str, str], message: str) -> str:
    """A commit of the pull request's branch, pushed; its sha."""
    src: Path = repo["src"]
    for name, text in files.items():
        (src / name).write_text(text)
    git(src, "add", "-A")
    git(src, "commit", "-qm", message)
    git(src, "push", "-q", "origin", "feature")
    return git(src, "rev-parse", "HEAD")


def run(repo: dict, fake: FakeGitHub, capsys, pg_dsn: str, name: str, sha: str, cache: Path | None):
    """One pull_request run of the action in a fresh workspace, the cache folder `cache` restored into it."""
    shas = {"main": repo["main"], "regress": sha, "url": repo["url"]}
    (repo["tmp"] / name).mkdir()
    workspace = checkout(shas, "feature", repo["tmp"] / name / "workspace")
    assert git(workspace, "rev-parse", "HEAD") == sha
    if cache is not None:
        shutil.copytree(cache, workspace / CACHE)
    rc, _ = pr_action(
        repo["tmp"] / name,
        fake,
        shas,
        branch="feature",
        capsys=capsys,
        workspace=workspace,
        config=CONFIG,
        cache_dir=CACHE,
        database_url=pg_dsn,
    )
    out = workspace / "sqlcanary-results"
    comparison = json.loads((out / "comparison.json").read_text())
    regressed = [c["id"] for c in comparison["cases"] if c["transition"] == "regressed"]
    return rc, read_run(out / "head.json"), regressed, workspace / CACHE, capsys.readouterr().out


def test_a_second_commit_that_breaks_a_case_outside_agent_inputs_is_asked_again(repo, fake, capsys, pg_dsn):
    first = push(repo, {"NOTES.md": "a first commit that changes nothing the agent answers from\n"}, "one")
    rc, head, regressed, cache, _ = run(repo, fake, capsys, pg_dsn, "first", first, None)
    assert (rc, regressed) == (0, [])
    assert (head.meta.agent_calls, head.meta.cache_hits) == (3, 0)
    assert list((cache / "answers").rglob("*.json"))  # the first commit's answers are cached

    second = push(repo, {"data/answers.json": json.dumps(BROKEN)}, "two: breaks names through the data file")
    rc, head, regressed, cache, out = run(repo, fake, capsys, pg_dsn, "second", second, cache)
    assert rc == 1 and regressed == ["names"]  # the second commit's own answers were judged
    assert (head.meta.agent_calls, head.meta.cache_hits) == (3, 0)
    assert head.meta.cache_basis == f"the whole head tree at {second[:12]}"
    assert "reusing the cached run" in out  # the base's side still comes from the cache

    rc, head, regressed, _, out = run(repo, fake, capsys, pg_dsn, "rerun", second, cache)
    assert rc == 1 and regressed == ["names"]
    assert (head.meta.agent_calls, head.meta.cache_hits) == (0, 3)  # the same commit: the same answers
    fp = head.meta.agent_fingerprint
    line = f"3 answer(s) from the answer cache (agent fingerprint {fp}: the whole head tree at {second[:12]})"
    assert line in out
    assert head.meta.reused_from and "reused whole: nothing that decides a verdict changed" in out  # issue 26


def test_a_reused_head_run_is_judged_again_when_anything_that_decides_it_changes(
    repo, fake, capsys, pg_dsn
) -> None:
    """The head's whole run comes from the cache only for the very tree and fixtures it was judged with, and
    only when the run under its key says it is that tree's: a run planted under the key's name and a changed
    fixture each get a judged run."""
    sha = push(repo, {"NOTES.md": "nothing the agent reads\n"}, "one")
    rc, head, regressed, cache, out = run(repo, fake, capsys, pg_dsn, "first", sha, None)
    assert (rc, regressed) == (0, []) and head.meta.reused_from is None
    rc, again, _, cache, out = run(repo, fake, capsys, pg_dsn, "again", sha, cache)
    assert rc == 0 and again.meta.reused_from == head.meta.started_at and "reused whole" in out
    assert [(c.id, c.status, c.reason) for c in again.cases] == [
        (c.id, c.status, c.reason) for c in head.cases
    ]

    # A run planted under the key with other fingerprints (another tree's) is not taken on its name.
    (planted,) = [
        p for p in (cache / "runs").glob("*.json") if read_run(p).meta.agent_fingerprint == fp_of(head)
    ]
    forged = head.model_copy(
        update={
            "meta": head.meta.model_copy(update={"agent_fingerprint": "0" * 16}),
            "cases": tuple(c.model_copy(update={"status": "failed"}) for c in head.cases),
        }
    )
    planted.write_text(forged.model_dump_json())
    rc, judged, regressed, cache, out = run(repo, fake, capsys, pg_dsn, "planted", sha, cache)
    assert rc == 0 and regressed == [] and judged.meta.reused_from is None
    assert all(c.status == "passed" for c in judged.cases)

    # A fixture changed by the pull request: judged again (and incomparable with the base, as before).
    fixture = repo["src"] / "evals/suite/shop.sql"
    changed = push(repo, {"evals/suite/shop.sql": fixture.read_text() + "\n-- moved\n"}, "two")
    _, judged, _, _, out = run(repo, fake, capsys, pg_dsn, "fixture", changed, cache)
    assert judged.meta.reused_from is None and "reused whole" not in out


def fp_of(run) -> str:
    return run.meta.agent_fingerprint
