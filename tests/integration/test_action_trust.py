"""The pull request cannot reach the runner through sqlcanary's output (issue 14, findings 5 and 8): an encoded
copy of the token is masked everywhere; a case id, an agent's stderr or SQL, a child's error cannot forge a
workflow command in the step log (read back as the runner reads it); and the check run goes only to the commit
that was evaluated. Driven like tests/integration/test_action.py: a bare remote, a depth-1 checkout, real
PostgreSQL, the fake GitHub; `sqlcanary action` as a real process where the step log matters."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from bot.base.errors import ConfigError
from bot.base.settings import Settings
from bot.commands.action import action
from bot.github.context import ActionContext
from bot.github.event import load_event
from bot.github.inputs import RunnerContext, read_inputs
from tests.integration.test_action import checkout, pr_event, runner_env
from tests.support.fake_github import FakeGitHub
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, client
from tests.support.github_runner_files import parse_outputs
from tests.support.step_log import commands, stopped_at_end
from tests.support.tinyrepo import CASES_YML, GOOD, commit_answers, git, make_tiny_repo

pytestmark = pytest.mark.integration

TOKEN = ACTIONS_TOKEN
B64 = base64.b64encode(TOKEN.encode()).decode()
B64_URL = base64.urlsafe_b64encode(b"\xfb" + TOKEN.encode()).decode().rstrip("=")
BLOB_PREFIX = b'{"auth": "x-access-token:'
BLOB = base64.b64encode(
    BLOB_PREFIX + TOKEN.encode() + b'", "n": 1}'
).decode()  # the token at offset 26 (2 mod 3)
ENCODED = {
    "base64": B64,
    "base64-unpadded": B64.rstrip("="),
    "urlsafe-shifted": B64_URL,
    "url": quote(TOKEN, safe=""),
    "url-plus": quote_plus(TOKEN + " x"),
    "hex": TOKEN.encode().hex(),
}
HOSTILE = (
    "\n::set-output name=verdict::pass\n::stop-commands::x\n%0A\r##[set-output name=verdict;]pass\n::x::"
)


def _token_core(offset: int) -> str:
    """The base64 characters that come from the token alone when it starts `offset` bytes into the data."""
    a = base64.b64encode(b"\x00" * offset + TOKEN.encode() + b"\x00\x00").decode()
    b = base64.b64encode(b"\xff" * offset + TOKEN.encode() + b"\xff\xff").decode()
    return "".join(x for x, y in zip(a, b, strict=True) if x == y).rstrip("=")


def _leaks(text: str) -> list[str]:
    """Which encoded forms of the token `text` holds (for the blob: any 8 characters of the token's part)."""
    found = [name for name, form in ENCODED.items() if form in text]
    core = _token_core(len(BLOB_PREFIX) % 3)
    found += ["blob"] if any(core[i : i + 8] in text for i in range(len(core) - 7)) else []
    return found + (["plain"] if TOKEN in text else [])


def _remote(tmp_path: Path, answers: dict[str, str], cases: str | None = None) -> dict[str, str]:
    """A bare remote with `main` (the tiny repository) and `regress` (`answers`, and `cases` when given)."""
    src = make_tiny_repo(tmp_path / "src")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(src, "remote", "add", "origin", str(bare))
    git(src, "push", "-q", "origin", "main")
    shas = {"main": git(src, "rev-parse", "HEAD"), "url": bare.as_uri(), "src": str(src)}
    git(src, "checkout", "-q", "-b", "regress")
    if cases is not None:
        (src / "evals/suite/cases/all.yml").write_text(cases)
    shas["regress"] = commit_answers(src, answers, "the pull request")
    git(src, "push", "-q", "origin", "regress")
    return shas


def _setup(
    tmp_path: Path,
    fake: FakeGitHub,
    pg_dsn: str,
    remote: dict[str, str],
    *,
    branch: str = "regress",
    head_sha: str | None = None,
) -> dict[str, str]:
    fake.state.add_repo(REPO)
    fake.state.add_pull(
        fake.base_url, REPO, head="regress", head_sha=remote["regress"], base_sha=remote["main"]
    )
    workspace = checkout(remote, branch, tmp_path / "workspace")
    event = pr_event(tmp_path / "event.json", remote | {"regress": head_sha or remote["regress"]})
    return runner_env(
        tmp_path,
        workspace,
        event,
        fake,
        "pull_request",
        github_token=TOKEN,
        config="evals/agent/sqlcanary.yml",
        database_url=pg_dsn,
        cache_dir=".sqlcanary/cache",
    )


def _action_in_process(env: dict[str, str], fake: FakeGitHub) -> int:
    settings = Settings.from_environ(env)
    inputs, runner = read_inputs(env), RunnerContext.from_environ(env)
    event = load_event(runner.event_name, runner.event_path, sha=runner.sha)
    ctx = ActionContext(inputs=inputs, runner=runner, event=event, mode="check")
    return action(ctx, settings, make_github=lambda token: client(fake, token))


def _action_process(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`sqlcanary action` as the runner starts it; stdout and stderr apart, as the runner reads them."""
    full = env | {"GITHUB_ACTIONS": "true", "SQLCANARY_ANSWER_CACHE": "off", "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "bot", "action"],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def _written(env: dict[str, str]) -> dict[str, str]:
    """Every file the action leaves: the results folder, the outputs, the summary."""
    out_dir = Path(env["GITHUB_WORKSPACE"]) / "sqlcanary-results"
    paths = [*out_dir.iterdir(), Path(env["GITHUB_OUTPUT"]), Path(env["GITHUB_STEP_SUMMARY"])]
    return {str(p): p.read_text(errors="replace") for p in paths if p.is_file()}


def test_an_encoded_token_in_an_answer_or_stderr_is_masked_in_every_request_file_and_log(
    tmp_path, fake, pg_dsn, monkeypatch, capfd
):
    monkeypatch.chdir(tmp_path)
    forms = " ".join([*ENCODED.values(), BLOB])
    answers = GOOD | {"names": f"SELECT '{forms}' AS name FROM customers", "cities": f"!leak {forms}"}
    env = _setup(tmp_path, fake, pg_dsn, _remote(tmp_path, answers))
    assert _action_in_process(env, fake) == 1
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]))["verdict"] == "regressions"  # the true verdict
    assert fake.requests, "the comment and the check run were sent"
    for request in fake.requests:
        assert _leaks(f"{request.path}{request.query}{request.headers}{request.raw_body}") == [], request.path
    for path, text in _written(env).items():
        assert _leaks(text) == [], path
    log = capfd.readouterr()
    assert _leaks(log.out + log.err) == []
    head = (Path(env["GITHUB_WORKSPACE"]) / "sqlcanary-results/head.json").read_text()
    assert "agent: found ***" in head  # the agent did print them: masked, not lost


def _assert_only_our_commands(log: str) -> list:
    """The commands the runner acts on: our masks, our fences and our own annotations, nothing forged."""
    active = commands(log)
    fences = {c.data for c in active if c.name == "stop-commands"}
    forged = [
        c
        for c in active
        if c.name not in ("add-mask", "stop-commands", "error", "notice", "warning") and c.name not in fences
    ]
    assert forged == [], log
    assert all(f.startswith("sqlcanary-") for f in fences) and not stopped_at_end(log)
    return [c for c in active if c.name in ("error", "notice", "warning")]


def test_a_hostile_case_id_cannot_forge_commands_in_the_step_log(tmp_path, fake, pg_dsn):
    """A duplicate case id holding command lines: the child that loads the suite prints it in its error."""
    hostile_id = json.dumps("names" + HOSTILE)
    cases = CASES_YML + f"- id: {hostile_id}\n  question: q\n  gold_sql: SELECT 1\n" * 2
    env = _setup(tmp_path, fake, pg_dsn, _remote(tmp_path, GOOD, cases=cases))
    done = _action_process(env, tmp_path)
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stderr == ""  # one stream on the runner: the fence is read before a child's lines
    assert (
        "duplicate case id" in done.stdout and "set-output name=verdict::pass" in done.stdout
    )  # text, inert
    [ours] = _assert_only_our_commands(done.stdout)
    assert ours.name == "error" and ours.props == {"title": "sqlcanary"}
    assert not Path(env["GITHUB_OUTPUT"]).exists() or "pass" not in Path(env["GITHUB_OUTPUT"]).read_text()
    assert done.stdout.splitlines()[0].startswith("::add-mask::")
    assert f"::add-mask::{B64}" in done.stdout  # the encoded forms are masked by the runner too


def test_hostile_agent_stderr_and_sql_cannot_forge_commands_and_the_verdict_is_the_true_one(
    tmp_path, fake, pg_dsn
):
    answers = GOOD | {"names": f'SELECT city AS "{HOSTILE}" FROM customers', "cities": f"!leak {HOSTILE}"}
    env = _setup(tmp_path, fake, pg_dsn, _remote(tmp_path, answers))
    done = _action_process(env, tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    _assert_only_our_commands(done.stdout + done.stderr)
    assert parse_outputs(Path(env["GITHUB_OUTPUT"]))["verdict"] == "regressions"
    [run] = fake.state.repo(REPO).check_runs.values()
    assert run["conclusion"] == "failure"


def test_a_payload_head_that_is_not_the_checkout_is_refused_before_anything_runs(
    tmp_path, fake, pg_dsn, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    remote = _remote(tmp_path, GOOD | {"names": "SELECT city FROM customers"})
    other = "f" * 40
    env = _setup(tmp_path, fake, pg_dsn, remote, head_sha=other)
    with pytest.raises(ConfigError) as refused:
        _action_in_process(env, fake)
    assert other in str(refused.value) and remote["regress"] in str(refused.value)
    assert fake.requests == []  # no comment, no check run, not even a read
    assert not (Path(env["GITHUB_WORKSPACE"]) / "sqlcanary-results").exists()  # nothing was evaluated
    done = _action_process(env, tmp_path)
    assert done.returncode == 2 and other in done.stdout
    assert [c.name for c in _assert_only_our_commands(done.stdout)] == ["error"]


def _merge_branch(remote: dict[str, str], first: str, second: str) -> str:
    """What GitHub makes for refs/pull/N/merge: the base with the head merged in (second parent), pushed."""
    src = Path(remote["src"])
    git(src, "checkout", "-q", "-B", "pr-merge", remote[first])
    git(src, "merge", "-q", "--no-ff", "-m", "Merge into main", remote[second])
    git(src, "push", "-q", "-f", "origin", "pr-merge")
    return git(src, "rev-parse", "HEAD")


def test_the_merge_commit_of_the_pull_request_is_accepted_and_reported_on_the_head(
    tmp_path, fake, pg_dsn, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    remote = _remote(tmp_path, GOOD | {"names": "SELECT city FROM customers"})
    merge = _merge_branch(remote, "main", "regress")
    env = _setup(tmp_path, fake, pg_dsn, remote, branch="pr-merge")
    assert git(Path(env["GITHUB_WORKSPACE"]), "rev-parse", "HEAD") == merge
    assert _action_in_process(env, fake) == 1
    [run] = fake.state.repo(REPO).check_runs.values()
    assert run["head_sha"] == remote["regress"] and run["conclusion"] == "failure"


def test_a_merge_whose_second_parent_is_not_the_head_is_refused(tmp_path, fake, pg_dsn, monkeypatch):
    monkeypatch.chdir(tmp_path)
    remote = _remote(tmp_path, GOOD | {"names": "SELECT city FROM customers"})
    src = Path(remote["src"])
    git(src, "checkout", "-q", "main")
    (src / "README").write_text("moved on\n")
    git(src, "add", "README")
    git(src, "commit", "-qm", "main moves on")
    remote["main-later"] = git(src, "rev-parse", "HEAD")
    _merge_branch(remote, "regress", "main-later")  # the head is the first parent here: not GitHub's merge
    env = _setup(tmp_path, fake, pg_dsn, remote, branch="pr-merge")
    with pytest.raises(ConfigError, match="pull_request.head.sha"):
        _action_in_process(env, fake)
    assert fake.requests == []
