"""Fingerprints, the answer cache, attempts and worktrees, without a database: what changes a fingerprint and
what does not, which answers are kept, how K attempts become one status, and that a worktree never stays."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.agents.base import AgentContext, Answer, request_for
from bot.base.errors import SqlcanaryError
from bot.base.results import CaseResult, Prediction, RunMeta, RunResult, summarize
from bot.base.settings import Settings
from bot.cases.model import Case
from bot.config.model import Config, load_config
from bot.run.cache import AnswerCache, AnswerSource, RunCache, cacheable, run_cache_key
from bot.run.case_results import combine_attempts
from bot.run.fingerprint import AgentInputs, agent_fingerprint, answer_key, kb_fingerprint, uses_answer_cache

KB_CONFIG = "agent: python:agent.py:answer\nkb:\n  paths: ['kb/**/*.yaml']\n"


def make_project(root: Path) -> Path:
    (root / "kb" / "metrics").mkdir(parents=True)
    (root / "kb" / "metrics" / "gmv.yaml").write_text("name: gmv\n")
    (root / "kb" / "notes.txt").write_text("not in kb.paths\n")
    (root / "helpers").mkdir()
    (root / "helpers" / "compose.py").write_text("X = 1\n")
    (root / "agent.py").write_text("def answer(request):\n    return 'SELECT 1'\n")
    (root / "sqlcanary.yml").write_text(KB_CONFIG)
    return root


NARROW = AgentInputs(globs=("agent.py", "helpers/**/*.py", "kb/**/*.yaml"))


def fingerprints(root: Path, inputs: AgentInputs = NARROW) -> tuple[str | None, str]:
    config = load_config(root / "sqlcanary.yml")
    kb = kb_fingerprint(config)
    return agent_fingerprint("python:agent.py:answer", {}, config.base_dir, kb, inputs=inputs), kb


@pytest.mark.parametrize("inputs", [NARROW, AgentInputs()], ids=["narrowed", "whole-tree"])
def test_fingerprints_do_not_depend_on_where_the_project_is_with_any_inputs(tmp_path, inputs):
    one = make_project(tmp_path / "one")
    two = tmp_path / "elsewhere" / "two"
    shutil.copytree(one, two)
    assert fingerprints(one, inputs) == fingerprints(two, inputs)
    assert all(fingerprints(one, inputs))


@pytest.mark.parametrize(
    "change,agent_changes,kb_changes",
    [
        (lambda r: (r / "kb" / "metrics" / "gmv.yaml").write_text("name: gmv2\n"), True, True),
        (lambda r: (r / "kb" / "metrics" / "new.yaml").write_text("name: new\n"), True, True),
        (lambda r: (r / "kb" / "metrics" / "gmv.yaml").rename(r / "kb" / "gmv.yaml"), True, True),
        (lambda r: (r / "helpers" / "compose.py").write_text("X = 2\n"), True, False),
        (lambda r: (r / "agent.py").write_text("def answer(request):\n    return 'SELECT 2'\n"), True, False),
        (lambda r: (r / "kb" / "notes.txt").write_text("edited\n"), False, False),
        (lambda r: (r / "README.md").write_text("docs\n"), False, False),
    ],
)
def test_what_changes_a_narrowed_fingerprint(tmp_path, change, agent_changes, kb_changes):
    root = make_project(tmp_path / "p")
    agent_before, kb_before = fingerprints(root)
    change(root)
    agent_after, kb_after = fingerprints(root)
    assert (agent_after != agent_before, kb_after != kb_before) == (agent_changes, kb_changes)


@pytest.mark.parametrize("edit", ["kb/notes.txt", "README.md", "data/answers.json", "prompts/system.txt"])
def test_by_default_any_file_the_agent_could_read_changes_its_fingerprint(tmp_path, edit):
    """Outside git: every file under the config folder counts unless `agent.inputs` narrows it."""
    root = make_project(tmp_path / "p")
    before, _ = fingerprints(root, AgentInputs())
    (root / edit).parent.mkdir(parents=True, exist_ok=True)
    (root / edit).write_text("changed\n")
    after, _ = fingerprints(root, AgentInputs())
    assert before is not None and after is not None and after != before


def test_agent_options_and_specs_change_the_fingerprint(tmp_path):
    root = make_project(tmp_path / "p")
    fp = agent_fingerprint("python:agent.py:answer", {}, root, "kb1")
    assert agent_fingerprint("python:agent.py:answer", {"model": "m2"}, root, "kb1") != fp
    assert agent_fingerprint("python:agent.py:other", {}, root, "kb1") != fp
    assert agent_fingerprint("gold", {}, root, "kb1") == agent_fingerprint("gold", {}, root, "kb2")


def test_a_command_agent_hashes_the_files_it_names_even_when_inputs_name_none(tmp_path):
    root = make_project(tmp_path / "p")
    spec, none = "command:python agent.py --fast", AgentInputs(globs=())
    fp = agent_fingerprint(spec, {}, root, "", inputs=none)
    (root / "helpers" / "compose.py").write_text("X = 3\n")  # not beside agent.py: not hashed
    assert agent_fingerprint(spec, {}, root, "", inputs=none) == fp
    (root / "util.py").write_text("Y = 1\n")  # beside it: hashed
    assert agent_fingerprint(spec, {}, root, "", inputs=none) != fp


def test_a_predictions_agent_hashes_its_file(tmp_path):
    (tmp_path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 1"}\n')
    fp = agent_fingerprint("predictions:preds.jsonl", {}, tmp_path, "", cwd=tmp_path)
    (tmp_path / "preds.jsonl").write_text('{"id": "a", "sql": "SELECT 2"}\n')
    assert agent_fingerprint("predictions:preds.jsonl", {}, tmp_path, "", cwd=tmp_path) != fp
    assert not uses_answer_cache("predictions:preds.jsonl") and not uses_answer_cache("gold:all")
    assert uses_answer_cache("python:agent.py:answer") and uses_answer_cache("command:x")


def test_no_kb_paths_means_no_kb_fingerprint(tmp_path):
    assert kb_fingerprint(Config(base_dir=str(tmp_path))) == ""


def case(**kw) -> Case:
    return Case(**{"id": "c1", "question": "How many?", "gold_sql": ("SELECT 1",), "db": "d", **kw})


def test_answer_key_covers_agent_case_and_attempt_but_never_the_gold():
    key = answer_key("fp", case(), 0)
    assert answer_key("fp", case(), 0) == key
    assert answer_key("fp", case(), 1) != key
    assert answer_key("fp2", case(), 0) != key
    assert answer_key("fp", case(question="How many now?"), 0) != key
    assert answer_key("fp", case(instructions="use orders"), 0) != key
    assert answer_key("fp", case(gold_sql=("SELECT 2",)), 0) == key


@pytest.mark.parametrize(
    "answer,kept",
    [
        (Answer(sql="SELECT 1", used=("kb/a.yaml:1-2",)), True),
        (Answer(error="the agent: no idea", error_class="agent_declined"), True),
        (Answer(error="the agent did not answer within 1s", error_class="agent_timeout"), False),
        (Answer(error="the agent exited with code 3", error_class="agent_crashed"), False),
        (Answer(error="not JSON", error_class="agent_bad_output"), False),
        (Answer(sql="SELECT 1", alternatives=("SELECT 1", "SELECT 2")), False),
    ],
)
def test_only_clean_answers_are_cached(tmp_path, answer, kept):
    cache = AnswerCache(tmp_path)
    assert cacheable(answer) is kept
    cache.put("ab" * 32, answer)
    got = cache.get("ab" * 32)
    if kept:
        assert (got.sql, got.used, got.error, got.error_class) == (
            answer.sql,
            answer.used,
            answer.error,
            answer.error_class,
        )
    else:
        assert got is None


@pytest.mark.parametrize(
    "value,allowed",
    [("", True), ("on", True), ("off", False), ("0", False), (" False ", False), ("no", False)],
)
def test_the_environment_can_turn_the_answer_cache_off(value, allowed):
    assert Settings.from_environ({"SQLCANARY_ANSWER_CACHE": value}).answer_cache is allowed
    assert Settings.from_environ({}).answer_cache is True


def test_a_corrupt_cache_entry_is_a_miss(tmp_path):
    cache = AnswerCache(tmp_path)
    cache.put("cd" * 32, Answer(sql="SELECT 1"))
    next((tmp_path / "answers").rglob("*.json")).write_text("{not json")
    assert cache.get("cd" * 32) is None
    runs = RunCache(tmp_path)
    runs.path("k").parent.mkdir(parents=True)
    runs.path("k").write_text("[]")
    assert runs.get("k") is None


class RecordingAgent:
    name = "recording"

    def __init__(self) -> None:
        self.requests: list[dict] = []

    def answer(self, c: Case) -> Answer:
        self.requests.append(request_for(c, AgentContext()))
        return Answer(sql=f"SELECT {len(self.requests)}")

    def close(self) -> None:
        pass


def test_answer_source_sends_the_attempt_counts_calls_and_hits(tmp_path):
    agent = RecordingAgent()
    source = AnswerSource(agent, fingerprint="fp", cache=AnswerCache(tmp_path))
    first = [source.answer(case(), k) for k in range(3)]
    assert [r["attempt"] for r in agent.requests] == [0, 1, 2]
    assert (source.calls, source.hits) == (3, 0)
    again = [source.answer(case(), k) for k in range(3)]
    assert (source.calls, source.hits) == (3, 3)
    assert [a.sql for a, _ in again] == [a.sql for a, _ in first] == ["SELECT 1", "SELECT 2", "SELECT 3"]
    assert len({key for _, key in first}) == 3
    assert "attempt" not in request_for(case(), AgentContext())  # outside a run the request is as before


def test_answer_source_without_cache_always_asks():
    source = AnswerSource(RecordingAgent(), fingerprint="fp", cache=None)
    for _ in range(2):
        source.answer(case(), 0)
    assert (source.calls, source.hits) == (2, 0)


def attempt(status: str, sql: str) -> CaseResult:
    return CaseResult(id="c1", status=status, category="query", prediction=Prediction(sql=sql), reason=sql)


@pytest.mark.parametrize(
    "statuses,status,passes",
    [
        (["passed", "failed", "passed"], "passed", 2),
        (["failed", "passed", "failed"], "failed", 1),
        (["passed", "failed"], "failed", 1),  # a tie goes to the worse outcome
        (["passed", "errored"], "errored", 1),
        (["failed", "errored", "passed", "passed"], "passed", 2),
        (["passed", "passed", "passed"], "passed", 3),
    ],
)
def test_attempts_combine_to_the_majority(statuses, status, passes):
    combined = combine_attempts([attempt(s, f"SELECT {i}") for i, s in enumerate(statuses)])
    assert (combined.status, combined.passes, combined.repeats) == (status, passes, len(statuses))
    assert [a.status for a in combined.attempts] == statuses
    assert combined.prediction.sql == f"SELECT {statuses.index(status)}"  # the first attempt with that status


def test_run_cache_round_trip(tmp_path):
    run = RunResult(meta=RunMeta(suite="s", suite_hash="h"), summary=summarize([]))
    key = run_cache_key({"base_sha": "a" * 40, "repeats": 1})
    assert key != run_cache_key({"base_sha": "a" * 40, "repeats": 3})
    cache = RunCache(tmp_path)
    assert cache.get(key) is None
    cache.put(key, run)
    assert cache.get(key) == run


# --------------------------------------------------------------------------------------------------------------
# git

git_missing = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git_repo(path: Path) -> Path:
    path.mkdir()
    env = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "f.txt").write_text("one\n")
    subprocess.run(["git", "add", "f.txt"], cwd=path, check=True)
    subprocess.run(["git", *env, "commit", "-q", "-m", "one"], cwd=path, check=True)
    return path


@git_missing
@pytest.mark.parametrize("ref", ["-x", "--output=/tmp/x", "", "a b", "main\n", "nope"])
def test_resolve_commit_refuses_bad_refs(tmp_path, ref):
    from bot.base.git import resolve_commit

    repo = git_repo(tmp_path / "r")
    with pytest.raises(SqlcanaryError):
        resolve_commit(repo, ref)
    assert len(resolve_commit(repo, "main")) == 40


@git_missing
def test_a_worktree_is_removed_even_when_the_work_fails(tmp_path):
    from bot.base.git import resolve_commit
    from bot.base.worktree import worktree

    repo = git_repo(tmp_path / "r")
    seen = []
    with pytest.raises(KeyboardInterrupt), worktree(repo, resolve_commit(repo, "main")) as tree:
        seen.append(tree)
        assert (tree / "f.txt").read_text() == "one\n"
        raise KeyboardInterrupt
    assert not seen[0].exists() and not seen[0].parent.exists()
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=repo, capture_output=True, text=True
    )
    assert listed.stdout.count("worktree ") == 1


@git_missing
def test_default_base_ref_prefers_the_base_branch_then_origin_main_then_main(tmp_path):
    from bot.base.git import default_base_ref

    repo = git_repo(tmp_path / "r")
    assert default_base_ref(repo, None) == "main"
    subprocess.run(["git", "branch", "release"], cwd=repo, check=True)
    assert default_base_ref(repo, "release") == "release"
    assert Settings.from_environ({"SQLCANARY_BASE_BRANCH": "release"}).base_branch == "release"
    subprocess.run(["git", "update-ref", "refs/remotes/origin/main", "HEAD"], cwd=repo, check=True)
    assert default_base_ref(repo, None) == "origin/main"
    with pytest.raises(SqlcanaryError, match="--base"):
        default_base_ref(repo, "gone")


@git_missing
def test_default_base_ref_finds_the_default_branch_when_it_is_not_main(tmp_path):
    """A `git init` repository whose branch is `master` (git before 2.28, or init.defaultBranch unset), a clone
    whose origin's HEAD names `trunk`, and a repository that configures `init.defaultBranch`."""
    from bot.base.git import default_base_ref

    repo = git_repo(tmp_path / "r")
    subprocess.run(["git", "branch", "-m", "main", "master"], cwd=repo, check=True)
    assert default_base_ref(repo, None) == "master"
    subprocess.run(["git", "branch", "develop"], cwd=repo, check=True)
    subprocess.run(["git", "config", "init.defaultBranch", "develop"], cwd=repo, check=True)
    assert default_base_ref(repo, None) == "develop"
    subprocess.run(["git", "update-ref", "refs/remotes/origin/trunk", "HEAD"], cwd=repo, check=True)
    subprocess.run(
        ["git", "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk"], cwd=repo, check=True
    )
    assert default_base_ref(repo, None) == "origin/trunk"
    subprocess.run(["git", "branch", "-D", "develop"], cwd=repo, check=True)
    subprocess.run(["git", "symbolic-ref", "--delete", "refs/remotes/origin/HEAD"], cwd=repo, check=True)
    subprocess.run(["git", "update-ref", "-d", "refs/remotes/origin/trunk"], cwd=repo, check=True)
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=repo, check=True)
    subprocess.run(["git", "branch", "-D", "master"], cwd=repo, check=True)
    with pytest.raises(
        SqlcanaryError, match="none of origin/develop, develop, origin/main, main, origin/master"
    ):
        default_base_ref(repo, None)


def test_config_reads_gate_and_cache_settings(tmp_path):
    path = tmp_path / "sqlcanary.yml"
    path.write_text("gate: {max_regressions: 2, min_pass_rate: 0.8}\ncache: {answers: false}\n")
    config = load_config(path)
    assert (config.gate.max_regressions, config.gate.min_pass_rate, config.gate.alpha) == (2, 0.8, 0.05)
    assert (config.cache.answers, config.cache.runs) == (False, True)
    path.write_text("gate:\n  max_regressions: -1\n")
    with pytest.raises(SqlcanaryError, match="gate.max_regressions") as err:
        load_config(path)
    assert err.value.exit_code == 2 and err.value.line == 2  # the nested key's own line
    path.write_text("cache: {anwsers: false}\n")
    with pytest.raises(SqlcanaryError, match="anwsers"):
        load_config(path)
