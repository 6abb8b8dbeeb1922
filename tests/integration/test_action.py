"""The GitHub Action end to end, in process: `action(...)` and `main()` with the environment the runner sets, a
real local bare git remote and a depth-1 checkout (the base commit must be fetched), real PostgreSQL, and the fake
GitHub that validates every request against GitHub's OpenAPI description."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from bot.base.errors import ConfigError
from bot.base.git import Git
from bot.base.settings import Settings
from bot.cli import main
from bot.commands.action import action
from bot.github.context import ActionContext
from bot.github.event import load_event
from bot.github.inputs import RunnerContext, read_inputs
from bot.modes.setup import action_settings
from tests.support.fake_github import FakeGitHub
from tests.support.github_fixtures import ACTIONS_TOKEN, NO_CHECKS_TOKEN, REPO, client
from tests.support.github_runner_files import parse_outputs
from tests.support.tinyrepo import CONFIG, GOOD, commit_answers, git, make_tiny_repo

pytestmark = pytest.mark.integration

LEAKED = ACTIONS_TOKEN  # what a careless agent prints to stderr


@pytest.fixture
def remote(tmp_path: Path) -> dict[str, str]:
    """A bare remote with `main` (all cases pass) and `regress` (case `names` broken, case `cities` leaking)."""
    src = make_tiny_repo(tmp_path / "src")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(src, "remote", "add", "origin", str(bare))
    git(src, "push", "-q", "origin", "main")
    shas = {"main": git(src, "rev-parse", "HEAD")}
    git(src, "checkout", "-q", "-b", "regress")
    shas["regress"] = commit_answers(
        src, GOOD | {"names": "SELECT city FROM customers", "cities": f"!leak {LEAKED}"}, "break names"
    )
    git(src, "push", "-q", "origin", "regress")
    shas["url"] = bare.as_uri()
    shas["src"] = str(src)
    return shas


def checkout(remote: dict[str, str], branch: str, where: Path) -> Path:
    """What actions/checkout does by default: one commit, the origin remote set."""
    git(where.parent, "clone", "-q", "--depth", "1", "--branch", branch, remote["url"], str(where))
    return where


def pr_event(
    path: Path,
    remote: dict[str, str],
    *,
    fork: bool = False,
    number: int = 1,
    author: str = "alice",
    branch: str = "regress",
) -> Path:
    head_repo = "mallory/agent" if fork else REPO
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    payload = {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "user": {"login": author},
            "head": {"ref": branch, "sha": remote["regress"], "repo": {**repo, "full_name": head_repo}},
            "base": {"ref": "main", "sha": remote["main"], "repo": repo},
        },
        "repository": repo,
        "sender": {"login": "alice"},
    }
    path.write_text(json.dumps(payload))
    return path


def runner_env(
    tmp_path: Path, workspace: Path, event: Path, fake: FakeGitHub, event_name: str, **inputs: str
) -> dict[str, str]:
    env = {
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_API_URL": fake.base_url,
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_SHA": git(workspace, "rev-parse", "HEAD"),
        "GITHUB_RUN_ID": "42",
        "GITHUB_JOB": "eval",
        "GITHUB_WORKFLOW": "sqlcanary",
        "CI": "true",
        "PATH": __import__("os").environ["PATH"],
    }
    env.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    return env


def pr_action(
    tmp: Path,
    fake: FakeGitHub,
    shas: dict[str, str],
    *,
    branch: str,
    capsys,
    workspace: Path | None = None,
    fork: bool = False,
    author: str = "alice",
    **inputs: str,
) -> tuple[int, Path]:
    """One pull_request run of the action in `tmp`: the fake knows the pull request (`shas`: main, regress - the
    head -, url), the workspace is a depth-1 checkout of `branch` (unless given), the event and the runner's
    environment are written; (exit code, workspace)."""
    tmp.mkdir(exist_ok=True)
    if REPO.lower() not in fake.state.repos:  # a repository the test made (attach_git) is kept
        fake.state.add_repo(REPO)
    fake.state.add_pull(fake.base_url, REPO, head=branch, head_sha=shas["regress"], base_sha=shas["main"])
    workspace = workspace or checkout(shas, branch, tmp / "workspace")
    event = pr_event(tmp / "event.json", shas, fork=fork, author=author, branch=branch)
    env = runner_env(tmp, workspace, event, fake, "pull_request", github_token=ACTIONS_TOKEN, **inputs)
    return run_action(env, fake, capsys), workspace


def run_action(env: dict[str, str], fake: FakeGitHub, capsys) -> int:
    settings = Settings.from_environ(env)
    inputs, runner = read_inputs(env), RunnerContext.from_environ(env)
    event = load_event(runner.event_name, runner.event_path, sha=runner.sha)
    ctx = ActionContext(inputs=inputs, runner=runner, event=event, mode=inputs.mode or "check")
    return action(ctx, settings, make_github=lambda token: client(fake, token))


@pytest.fixture
def pr(tmp_path, remote, fake, pg_dsn, monkeypatch):
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)  # the action changes into the workspace; the test's folder comes back after
    fake.state.add_repo(REPO)
    fake.state.add_pull(
        fake.base_url, REPO, head="regress", head_sha=remote["regress"], base_sha=remote["main"]
    )
    workspace = checkout(remote, "regress", tmp_path / "workspace")
    event = pr_event(tmp_path / "event.json", remote)
    env = runner_env(
        tmp_path,
        workspace,
        event,
        fake,
        "pull_request",
        github_token=ACTIONS_TOKEN,
        config=CONFIG,
        database_url=pg_dsn,
        cache_dir=".sqlcanary/cache",
    )
    return {"env": env, "workspace": workspace, "tmp": tmp_path}


def comments(fake: FakeGitHub) -> list[dict]:
    return list(fake.state.repo(REPO).comments.values())


def test_a_pull_request_gets_one_sticky_comment_a_check_run_annotations_summary_and_outputs(
    pr, fake, remote, capsys
):
    assert run_action(pr["env"], fake, capsys) == 1
    [comment] = comments(fake)
    assert comment["user"]["login"] == "github-actions[bot]"
    assert "names" in comment["body"] and "<!-- sqlcanary:comment:" in comment["body"]
    [run] = fake.state.repo(REPO).check_runs.values()
    assert run["conclusion"] == "failure" and run["head_sha"] == remote["regress"]
    assert run["name"].startswith("sqlcanary")
    notes = fake.state.repo(REPO).annotations[run["id"]]
    paths = {(n["path"], n["annotation_level"]) for n in notes}
    assert ("evals/suite/cases/all.yml", "failure") in paths  # the regressed case's line
    assert ("data/answers.json", "warning") in paths  # the KB line its answer used
    case_line = next(n for n in notes if n["path"] == "evals/suite/cases/all.yml" and "names" in n["title"])
    assert case_line["start_line"] == 4  # `- id: names`
    outputs = parse_outputs(Path(pr["env"]["GITHUB_OUTPUT"]))
    assert outputs["verdict"] == "regressions" and outputs["regressions"] == "2" and outputs["fixes"] == "0"
    assert outputs["pass-rate-base"] == "1.0000" and float(outputs["pass-rate-head"]) == pytest.approx(
        1 / 3, abs=1e-4
    )
    assert Path(outputs["comment-path"]).is_file() and Path(outputs["report-path"]).is_file()
    assert "names" in Path(pr["env"]["GITHUB_STEP_SUMMARY"]).read_text()


def test_runs_on_one_pr_keep_one_comment_edited_once_and_an_unchanged_run_edits_nothing(
    pr, fake, remote, capsys
):
    assert run_action(pr["env"], fake, capsys) == 1
    # A new commit on the pull request fixes `names`: the same comment is edited.
    src = Path(remote["src"])
    new_head = commit_answers(src, GOOD | {"cities": f"!leak {LEAKED}"}, "fix names")
    git(src, "push", "-q", "origin", "regress")
    git(pr["workspace"], "fetch", "-q", "--depth", "1", "origin", "regress")
    git(pr["workspace"], "checkout", "-q", "--detach", "FETCH_HEAD")
    pr["env"]["GITHUB_SHA"] = new_head
    pr_event(
        Path(pr["env"]["GITHUB_EVENT_PATH"]), {**remote, "regress": new_head}
    )  # the event names the new head
    assert run_action(pr["env"], fake, capsys) == 1
    assert run_action(pr["env"], fake, capsys) == 1  # nothing changed: the comment is left alone
    assert len(comments(fake)) == 1
    assert len(fake.calls("issues/create-comment")) == 1
    assert len(fake.calls("issues/update-comment")) == 1
    assert new_head[:7] in comments(fake)[0]["body"] or "cities" in comments(fake)[0]["body"]


def test_matrix_legs_with_their_own_comment_key_keep_their_own_comment_and_check_run(pr, fake, capsys):
    """Two legs of one job that differ in the model, not the shard: one key each, so neither overwrites the other."""
    for model in ("small", "large", "small"):
        assert run_action({**pr["env"], "INPUT_COMMENT-KEY": model}, fake, capsys) == 1
    bodies = sorted(c["body"].splitlines()[0] for c in comments(fake))
    assert len(bodies) == 2 and bodies[0].endswith("/large -->") and bodies[1].endswith("/small -->")
    names = sorted(r["name"] for r in fake.state.repo(REPO).check_runs.values())
    assert any(n.endswith("/large)") for n in names) and any(n.endswith("/small)") for n in names)
    assert len(fake.calls("issues/create-comment")) == 2


def test_no_secret_reaches_a_request_a_file_the_summary_or_the_log(pr, fake, capsys):
    assert run_action(pr["env"], fake, capsys) == 1
    assert fake.leaks(LEAKED) == []
    out_dir = pr["workspace"] / "sqlcanary-results"
    for path in [
        *out_dir.iterdir(),
        Path(pr["env"]["GITHUB_OUTPUT"]),
        Path(pr["env"]["GITHUB_STEP_SUMMARY"]),
    ]:
        assert LEAKED not in path.read_text(errors="replace"), path
    captured = capsys.readouterr()
    assert LEAKED not in captured.out + captured.err
    assert "agent: found ***" in (out_dir / "head.json").read_text()  # the leaked token was there, masked


def test_a_fork_pull_request_writes_nothing_to_github_and_leaves_the_files_to_post(pr, fake, remote, capsys):
    event = pr_event(pr["tmp"] / "fork.json", remote, fork=True)
    env = pr["env"] | {"GITHUB_EVENT_PATH": str(event), "INPUT_OPENAI-API-KEY": "sk-test-should-not-be-used"}
    assert run_action(env, fake, capsys) == 1
    assert fake.requests == []  # not even a read
    out_dir = pr["workspace"] / "sqlcanary-results"
    payload = json.loads((out_dir / "github-payload.json").read_text())
    assert payload["pr_number"] == 1 and payload["check_run"]["conclusion"] == "failure"
    assert (out_dir / "comment.md").read_text().startswith("<!-- sqlcanary:comment:")
    assert "::notice::" in capsys.readouterr().out


def test_a_dependabot_pull_request_is_evaluated_only_and_the_llm_key_is_not_passed_on(
    pr, fake, remote, capsys
):
    event = pr_event(pr["tmp"] / "bot.json", remote, author="dependabot[bot]")
    env = pr["env"] | {
        "GITHUB_EVENT_PATH": str(event),
        "INPUT_OPENAI-API-KEY": "sk-test-should-not-be-used",
        "OPENAI_API_KEY": "sk-from-the-workflow-env",
    }
    settings = Settings.from_environ(env)
    inputs, runner = read_inputs(env), RunnerContext.from_environ(env)
    ctx = ActionContext(inputs=inputs, runner=runner, event=load_event("pull_request", event), mode="check")
    evaluation = action_settings(settings, ctx, pr["workspace"]).environ
    assert "OPENAI_API_KEY" not in evaluation and not any(k.startswith("INPUT_") for k in evaluation)
    assert "sk-" not in json.dumps(dict(evaluation))
    trusted = replace(ctx, event=load_event("pull_request", pr_event(pr["tmp"] / "ok.json", remote)))
    assert (
        action_settings(settings, trusted, pr["workspace"]).environ["OPENAI_API_KEY"]
        == "sk-test-should-not-be-used"
    )
    assert run_action(env, fake, capsys) == 1
    assert fake.requests == []
    assert "Dependabot" in capsys.readouterr().out


def test_a_token_without_checks_permission_falls_back_to_a_commit_status(pr, fake, remote, capsys):
    env = pr["env"] | {"INPUT_GITHUB-TOKEN": NO_CHECKS_TOKEN}
    assert run_action(env, fake, capsys) == 1
    assert fake.state.repo(REPO).check_runs == {}
    [status] = fake.state.repo(REPO).statuses
    assert status["state"] == "failure" and len(status["description"]) <= 140
    assert len(comments(fake)) == 1


def test_fail_on_regression_false_reports_without_failing(pr, fake, capsys):
    env = pr["env"] | {"INPUT_FAIL-ON-REGRESSION": "false"}
    assert run_action(env, fake, capsys) == 0
    [run] = fake.state.repo(REPO).check_runs.values()
    assert run["conclusion"] == "neutral"
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]))["verdict"] == "regressions"


def test_after_a_push_baseline_the_pr_base_is_not_evaluated_again(pr, fake, remote, capsys, tmp_path):
    main_checkout = checkout(remote, "main", tmp_path / "main-workspace")
    push = tmp_path / "push.json"
    repo = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    push.write_text(
        json.dumps(
            {
                "ref": "refs/heads/main",
                "before": "0" * 40,
                "after": remote["main"],
                "repository": repo,
                "sender": {"login": "alice"},
            }
        )
    )
    cache = str(tmp_path / "shared-cache")  # what actions/cache restores in both jobs
    env = runner_env(
        tmp_path,
        main_checkout,
        push,
        fake,
        "push",
        github_token=ACTIONS_TOKEN,
        config=CONFIG,
        database_url=pr["env"]["INPUT_DATABASE-URL"],
        cache_dir=cache,
    )
    assert run_action(env | {"INPUT_MODE": "baseline"}, fake, capsys) == 0
    capsys.readouterr()
    assert run_action(pr["env"] | {"INPUT_CACHE-DIR": cache}, fake, capsys) == 1
    assert "reusing the cached run" in capsys.readouterr().out
    base = json.loads((pr["workspace"] / "sqlcanary-results/base.json").read_text())
    baseline = json.loads((main_checkout / "sqlcanary-results/baseline.json").read_text())
    assert base == baseline  # the very run the push stored: no agent call for the base


def test_main_reads_the_runner_environment_masks_secrets_first_and_exits_with_the_gate(
    pr, fake, monkeypatch, capsys
):
    for key, value in pr["env"].items():
        monkeypatch.setenv(key, value)
    assert main(["action"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("::add-mask::")
    assert f"::add-mask::{ACTIONS_TOKEN}" in out
    assert parse_outputs(Path(pr["env"]["GITHUB_OUTPUT"]))["verdict"] == "regressions"
    assert len(comments(fake)) == 1


def test_main_names_a_bad_input_and_exits_2(pr, monkeypatch, capsys):
    for key, value in pr["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("INPUT_REPEAT", "lots")
    assert main(["action"]) == 2
    out = capsys.readouterr()
    assert "::error title=sqlcanary::input `repeat`" in out.out


@dataclass(frozen=True)
class RecordingGit(Git):
    """The checkout's repository as the action is handed it: every git command it runs is recorded (by this
    object and the copies it makes with another environment, which share the list), and a `fetch` can be
    refused (a remote that does not answer)."""

    calls: list[tuple[str, ...]] = field(default_factory=list)
    refuse_fetch: bool = False

    def run(self, *args: str, **kwargs):  # type: ignore[override]
        self.calls.append(args)
        if self.refuse_fetch and args[:1] == ("fetch",):
            return subprocess.CompletedProcess(
                ["git", *args], 128, "", "fatal: unable to access the remote\n"
            )
        return super().run(*args, **kwargs)


def _ctx(env: dict[str, str]) -> ActionContext:
    inputs, runner = read_inputs(env), RunnerContext.from_environ(env)
    event = load_event(runner.event_name, runner.event_path, sha=runner.sha)
    return ActionContext(inputs=inputs, runner=runner, event=event, mode="check")


def test_the_action_verifies_the_checkout_and_fetches_the_base_through_the_git_it_is_given(pr, fake, remote):
    given = RecordingGit(pr["workspace"])
    code = action(
        _ctx(pr["env"]), Settings.from_environ(pr["env"]), make_github=lambda t: client(fake, t), git=given
    )
    assert code == 1
    assert ("rev-parse", "--verify", "HEAD^{commit}") in given.calls  # the checkout is the PR's head
    fetches = [c for c in given.calls if c[:1] == ("fetch",)]
    assert len(fetches) == 1 and fetches[0][-1] == remote["main"]  # the depth-1 checkout lacked the base


def test_a_base_commit_the_given_git_cannot_fetch_is_a_clear_error_and_nothing_is_posted(pr, fake, remote):
    given = RecordingGit(pr["workspace"], refuse_fetch=True)
    with pytest.raises(ConfigError, match=f"cannot fetch the base commit {remote['main'][:12]}"):
        action(
            _ctx(pr["env"]),
            Settings.from_environ(pr["env"]),
            make_github=lambda t: client(fake, t),
            git=given,
        )
    assert fake.writes() == []
