"""`mode: post` end to end against the fake GitHub: a fork's pull request is evaluated with nothing sent, its
`sqlcanary-results/` is the artifact, and a `workflow_run` job posts it to the right pull request and commit;
tampered artifacts are refused (nothing sent) or escaped, and nothing in them runs; the legs of a sharded check
become one comment and one check run with the unsharded check's verdict. Real git remotes, real PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from bot.base.errors import ResultFileError
from tests.integration.test_action import checkout, pr_action, pr_event, remote, run_action, runner_env
from tests.support.fake_github import FakeGitHub
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO
from tests.support.github_runner_files import parse_outputs
from tests.support.tinyrepo import CASES_YML, CONFIG, GOOD, commit_answers, git, make_tiny_repo

pytestmark = pytest.mark.integration
_ = remote  # the fixture, imported for this module's tests

HOSTILE_ID = "names<img src=x onerror=alert(1)>**[click](https://evil.example)**@admin"
RAN = "ran.txt"  # what a planted script would write if anything executed it


@pytest.fixture
def fork_leg(tmp_path, remote, fake, pg_dsn, monkeypatch, capsys) -> Path:
    """A fork's pull request #1 (head mallory:regress) checked with nothing sent: its sqlcanary-results/."""
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    fake.state.add_repo(REPO)
    fake.state.add_pull(
        fake.base_url,
        REPO,
        head="regress",
        head_sha=remote["regress"],
        base_sha=remote["main"],
        head_repo="mallory/agent",
    )
    workspace = checkout(remote, "regress", tmp_path / "leg")
    event = pr_event(tmp_path / "pr.json", remote, fork=True)
    env = runner_env(tmp_path, workspace, event, fake, "pull_request", config=CONFIG, database_url=pg_dsn)
    assert run_action(env, fake, capsys) == 1
    assert fake.requests == []
    return workspace / "sqlcanary-results"


def _artifact(leg: Path, where: Path) -> Path:
    """What actions/download-artifact writes: DIR/<artifact name>/..., with a planted script beside."""
    shutil.copytree(leg, where / "sqlcanary-results")
    (where / "sqlcanary-results" / "conftest.py").write_text(f"open({str(where / RAN)!r}, 'w').write('x')\n")
    return where


def _workflow_run_event(path: Path, remote: dict[str, str], *, event: str = "pull_request") -> Path:
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    run = {
        "id": 99,
        "event": event,
        "head_sha": remote["regress"],
        "head_branch": "regress",
        "conclusion": "failure",
        "head_repository": {"full_name": "mallory/agent", "owner": {"login": "mallory"}},
        "pull_requests": [],  # GitHub leaves it empty for a fork's pull request
        "actor": {"login": "mallory"},
    }
    path.write_text(json.dumps({"action": "completed", "workflow_run": run, "repository": repo}))
    return path


def _post(tmp: Path, fake: FakeGitHub, remote: dict[str, str], artifacts: Path, capsys, **kw: str) -> int:
    """The workflow_run job: a checkout of the default branch (never the pull request's code), a write token."""
    tmp.mkdir(exist_ok=True)
    workspace = checkout(remote, "main", tmp / "poster")
    event = _workflow_run_event(tmp / "run.json", remote, **kw)
    env = runner_env(
        tmp, workspace, event, fake, "workflow_run", github_token=ACTIONS_TOKEN, artifacts=str(artifacts)
    )
    return run_action(env | {"INPUT_MODE": "post"}, fake, capsys)


def _comments(fake: FakeGitHub) -> list[dict]:
    return list(fake.state.repo(REPO).comments.values())


def test_a_fork_pull_requests_artifact_is_posted_to_its_pull_request_and_commit(
    tmp_path, fork_leg, fake, remote, capsys
):
    art = _artifact(fork_leg, tmp_path / "artifacts")
    assert _post(tmp_path, fake, remote, art, capsys) == 0
    [comment] = _comments(fake)
    assert comment["issue_url"].endswith("/issues/1") and comment["user"]["login"] == "github-actions[bot]"
    assert "names" in comment["body"] and comment["body"].startswith("<!-- sqlcanary:comment:")
    [run] = fake.state.repo(REPO).check_runs.values()
    assert run["head_sha"] == remote["regress"] and run["conclusion"] == "failure"
    assert [c.operation for c in fake.calls("pulls/list")], "the fork's PR was looked up by owner:branch"
    assert not (art / RAN).exists()  # the planted script never ran
    outputs = parse_outputs(tmp_path / "output.txt")
    assert outputs["verdict"] == "regressions" and outputs["regressions"] == "2"
    # Posted again (a re-run): the same comment, unchanged.
    assert _post(tmp_path / "again", fake, remote, art, capsys) == 0
    assert len(_comments(fake)) == 1


def _rename_case(folder: Path, old: str, new: str, question: str) -> None:
    for name in ("head.json", "base.json", "comparison.json"):
        data = json.loads((folder / name).read_text())
        for case in data["cases"]:
            if case["id"] == old:
                case["id"], case["question"] = new, question
        (folder / name).write_text(json.dumps(data))


def _prose(markdown: str) -> str:
    """The text GitHub renders as Markdown and HTML: without code spans (Markdown's, or <code> in an HTML block),
    which show their text as it is."""
    return re.sub(r"<code>.*?</code>", "", re.sub(r"(`+)(.+?)\1", "", markdown))


def test_a_hostile_case_id_and_an_oversize_question_are_escaped_and_cut_in_the_comment(
    tmp_path, fork_leg, fake, remote, capsys
):
    art = _artifact(fork_leg, tmp_path / "artifacts")
    _rename_case(art / "sqlcanary-results", "names", HOSTILE_ID, "Q" * 300_000 + "<script>x</script>")
    assert _post(tmp_path, fake, remote, art, capsys) == 0
    [comment] = _comments(fake)
    body = comment["body"]
    assert len(body) <= 65_536
    prose = _prose(body)
    assert "<code>names&lt;img src=x onerror=alert(1)&gt;" in body
    for bad in ("<img", "<script", "[click](https"):
        assert bad not in prose, prose[max(prose.find(bad) - 300, 0) : prose.find(bad) + 100]
    assert "@admin" not in prose  # no mention either
    assert "names&lt;img src=x onerror=alert(1)&gt;" in body  # the id, shown as inert text
    [run] = fake.state.repo(REPO).check_runs.values()
    assert "<img" not in _prose(run["output"]["summary"])
    assert not (art / RAN).exists()


@pytest.mark.parametrize(
    "tamper, reason",
    [
        ("symlink", "symbolic link"),
        ("schema", "schema_version 7 is not 1"),
        ("outside", "a path outside its folder"),
        ("oversize", "bytes allowed per file"),
        ("other_pr", "it names pull request #2"),
        ("other_sha", "it names commit"),
    ],
)
def test_a_tampered_artifact_is_refused_naming_the_file_and_nothing_is_sent(
    tmp_path, fork_leg, fake, remote, capsys, tamper, reason
):
    fake.state.add_pull(
        fake.base_url, REPO, head="other", head_sha="c" * 40, head_repo="mallory/agent"
    )  # PR #2
    art = _artifact(fork_leg, tmp_path / "artifacts")
    leg = art / "sqlcanary-results"
    payload = leg / "github-payload.json"
    data = json.loads(payload.read_text())
    if tamper == "symlink":
        (leg / "head.json").unlink()
        os.symlink("/etc/hostname", leg / "head.json")
    elif tamper == "schema":
        head = json.loads((leg / "head.json").read_text())
        (leg / "head.json").write_text(json.dumps(head | {"schema_version": 7}))
    elif tamper == "outside":
        data["files"]["head"] = "../../../leg/sqlcanary-results/head.json"
    elif tamper == "oversize":
        with open(leg / "comment.md", "ab") as fh:
            fh.truncate(64 * 1024 * 1024)
    elif tamper == "other_pr":
        data["pr_number"] = 2
    else:
        data["head_sha"] = "c" * 40
    payload.write_text(json.dumps(data))
    fake.requests.clear()
    with pytest.raises(ResultFileError, match=reason) as err:
        _post(tmp_path, fake, remote, art, capsys)
    assert err.value.path and err.value.path.startswith("sqlcanary-results/")
    assert fake.writes() == [] and _comments(fake) == []
    assert not (art / RAN).exists()


def test_a_run_of_another_event_is_skipped_with_a_notice(tmp_path, fork_leg, fake, remote, capsys):
    art = _artifact(fork_leg, tmp_path / "artifacts")
    assert _post(tmp_path, fake, remote, art, capsys, event="push") == 0
    assert fake.requests == [] and "::notice::" in capsys.readouterr().out


# ---- a sharded check: legs of shard i/N upload, one job posts -------------------------------------------------


def _sharded_remote(tmp_path: Path) -> dict[str, str]:
    """Four cases, in both shards of 2 (`ids` in 1, the others in 2); the pull request breaks `ids` and `names`."""
    good = GOOD | {"ids": "SELECT id FROM customers"}
    src = make_tiny_repo(tmp_path / "src", good)
    (src / "evals/suite/cases/all.yml").write_text(
        CASES_YML + "- id: ids\n  question: Ids?\n  gold_sql: SELECT id FROM customers\n"
    )
    git(src, "commit", "-qam", "a fourth case")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(src, "remote", "add", "origin", str(bare))
    git(src, "push", "-q", "origin", "main")
    shas = {"main": git(src, "rev-parse", "HEAD"), "url": bare.as_uri(), "src": str(src)}
    git(src, "checkout", "-q", "-b", "regress")
    broken = good | {"ids": "SELECT name FROM customers", "names": "SELECT city FROM customers"}
    shas["regress"] = commit_answers(src, broken, "break ids and names")
    git(src, "push", "-q", "origin", "regress")
    return shas


def test_two_shards_post_one_comment_and_one_check_run_with_the_unsharded_verdict(
    tmp_path, fake, pg_dsn, monkeypatch, capsys
):
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    shas = _sharded_remote(tmp_path)
    quiet = {"comment": "off", "check_run": "false", "config": CONFIG, "database_url": pg_dsn}
    code, whole = pr_action(tmp_path / "whole", fake, shas, branch="regress", capsys=capsys, **quiet)
    assert code == 1
    unsharded = parse_outputs(tmp_path / "whole" / "output.txt")
    artifacts = tmp_path / "artifacts"
    for i in (1, 2):
        code, ws = pr_action(
            tmp_path / f"leg{i}", fake, shas, branch="regress", capsys=capsys, shard=f"{i}/2", **quiet
        )
        assert code == 1
        shutil.copytree(ws / "sqlcanary-results", artifacts / f"sqlcanary-results-{i}")
        head = json.loads((ws / "sqlcanary-results" / "head.json").read_text())
        assert head["meta"]["shard"] == f"{i}/2" and head["cases"], "each shard evaluated its own cases"
    assert fake.writes() == []  # the legs only wrote their artifacts
    (tmp_path / "final").mkdir()
    final = checkout(shas, "regress", tmp_path / "final" / "workspace")
    code, _ = pr_action(
        tmp_path / "final",
        fake,
        shas,
        branch="regress",
        capsys=capsys,
        workspace=final,
        mode="post",
        artifacts=str(artifacts),
    )
    assert code == 1  # the gate's, as the unsharded check's
    [comment] = _comments(fake)
    [run] = fake.state.repo(REPO).check_runs.values()
    assert run["conclusion"] == "failure" and run["head_sha"] == shas["regress"]
    assert "ids" in comment["body"] and "names" in comment["body"]
    posted = parse_outputs(tmp_path / "final" / "output.txt")
    for key in ("verdict", "regressions", "fixes", "pass-rate-head", "pass-rate-base"):
        assert posted[key] == unsharded[key], key
    merged = json.loads((final / "sqlcanary-results" / "comparison.json").read_text())
    alone = json.loads((whole / "sqlcanary-results" / "comparison.json").read_text())
    assert [(c["id"], c["transition"]) for c in merged["cases"]] == [
        (c["id"], c["transition"]) for c in alone["cases"]
    ]


def test_a_missing_shard_is_named_and_nothing_is_posted(tmp_path, fake, pg_dsn, monkeypatch, capsys):
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    shas = _sharded_remote(tmp_path)
    quiet = {"comment": "off", "check_run": "false", "config": CONFIG, "database_url": pg_dsn}
    _, ws = pr_action(tmp_path / "leg1", fake, shas, branch="regress", capsys=capsys, shard="1/2", **quiet)
    shutil.copytree(ws / "sqlcanary-results", tmp_path / "artifacts" / "sqlcanary-results-1")
    with pytest.raises(Exception, match=r"shard\(s\) 2 of 2 are missing"):
        pr_action(
            tmp_path / "final",
            fake,
            shas,
            branch="regress",
            capsys=capsys,
            mode="post",
            artifacts=str(tmp_path / "artifacts"),
        )
    assert fake.writes() == []
