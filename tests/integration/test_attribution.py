"""Which hunk broke it, end to end: a git repository holding a small suite, a KB of `name: SQL` lines and a
`command:` agent that reads it (tests/fixtures/attribution), a pull request committed on it, its diff as `check`
takes it (pr_diff), the cases asked again on a copy of the head's tree with changes reverted, on PostgreSQL.
With an agent that lists the KB line it used in `used` and with one that lists nothing, the attribution names
the same change: it asks, it does not read `used`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

from bot.attribution.causal import CauseRequest, find_causes
from bot.attribution.delta import attribute
from bot.attribution.evaluator import TreeEvaluator
from bot.attribution.hunks import kb_changes
from bot.attribution.revert import partial_revert
from bot.base.settings import Settings
from bot.base.worktree import worktree
from bot.cases.loader import load_suite
from bot.check.diff import pr_diff
from bot.config.model import load_config
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
FOLDER = "analytics"  # the suite and config sit below the repository root: diff paths are the root's
IDS = ("big", "buyers", "north", "orders", "revenue", "revenue-total", "south")

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


def make_repo(root: Path, pr: str, *, used: bool) -> tuple[Path, str, str]:
    """(repository, base sha, head sha): the fixture tree committed, then the pull request's KB files."""
    repo = root / "repo"
    shutil.copytree(FIXTURES / "tree", repo / FOLDER)
    spec = f"command:{sys.executable} agent.py" + ("" if used else " --no-used")
    config = repo / FOLDER / "sqlcanary.yml"
    config.write_text(config.read_text().replace("command:PYTHON agent.py", spec))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    shutil.copytree(FIXTURES / "prs" / pr / "kb", repo / FOLDER / "kb", dirs_exist_ok=True)
    git(repo, "commit", "-qam", pr)
    return repo, base, git(repo, "rev-parse", "HEAD")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    env = MappingProxyType({"PATH": os.environ.get("PATH", os.defpath)})
    return Settings(cache_dir=tmp_path / "cache", answer_cache=True, environ=env)


def evaluate_pr(tmp_path: Path, pr: str, used: bool, pg_server, settings: Settings):
    """(changes, evaluator, head statuses, base statuses) with the evaluator open; the caller closes it."""
    repo, base_sha, head_sha = make_repo(tmp_path, pr, used=used)
    config = load_config(repo / FOLDER / "sqlcanary.yml")
    diff = pr_diff(repo, base_sha, head_sha)
    with worktree(repo, base_sha, label="base") as base_root:
        changes = kb_changes(diff, config=config, base_root=base_root, head_root=repo)
    suite = load_suite(repo / FOLDER)
    ev = TreeEvaluator(
        root=repo, changes=changes, config=config, suite=suite, server=pg_server, settings=settings
    )
    ev.open()
    head = {i: s.status for i, s in ev.evaluate(frozenset(), IDS).items()}
    base = {i: s.status for i, s in ev.evaluate(changes.ids, IDS).items()}
    return repo, changes, ev, head, base


@pytest.mark.parametrize("used", [True, False], ids=["used", "no-used"])
def test_three_hunks_one_breaks_names_that_hunk_only(
    tmp_path: Path, pg_server, settings: Settings, used: bool
):
    repo, changes, ev, head, base = evaluate_pr(tmp_path, "three_hunks", used, pg_server, settings)
    kb_before = {p: (repo / p).read_text() for p in changes.files}
    copy = ev.tree
    try:
        assert [(c.file, c.where) for c in changes.changes] == [
            (f"{FOLDER}/kb/metrics.yaml", "line 1"),
            (f"{FOLDER}/kb/metrics.yaml", "line 3"),
            (f"{FOLDER}/kb/regions.yaml", "line 3"),
        ]
        regressed = sorted(i for i in IDS if base[i] == "passed" and head[i] != "passed")
        assert regressed == ["revenue", "revenue-total"]
        # as root, every ask's agent ran as a sandbox user of its own (bot.agents.sandbox), never as root
        assert (ev.isolation or "").startswith("uid ") == (os.geteuid() == 0)
        calls = ev.agent_calls
        result = attribute(regressed, changes, ev)
        for case in regressed:
            (cause,) = result.causes(case)
            assert (cause.file, cause.where) == (f"{FOLDER}/kb/metrics.yaml", "line 3")
            assert (
                cause.text
                == "-revenue: SELECT sum(amount) FROM orders\n+revenue: SELECT avg(amount) FROM orders"
            )
        assert result.agent_calls == ev.agent_calls - calls
        # every case was asked once with all reverted (the answer cache already held those: the base statuses
        # above), then each alone over 3 changes: a handful of calls, never the suite
        assert 0 < result.agent_calls <= 2 * 3
        again = attribute(regressed, changes, ev)  # a fresh attribution: the answer cache answers everything
        assert again.cases == result.cases and again.agent_calls == 0 and ev.cache_hits > 0
        rev = partial_revert(result, changes, ev, head=head, regressed=regressed)
        assert rev.holds, rev.reason
        assert rev.restored == ("revenue", "revenue-total") and rev.broken == ()
        metrics = rev.files[f"{FOLDER}/kb/metrics.yaml"]
        assert metrics.startswith("# the shop's metrics")  # the PR's other edits are kept
        assert "revenue: SELECT sum(amount) FROM orders\n" in metrics
        assert set(rev.files) == {f"{FOLDER}/kb/metrics.yaml"}
        assert rev.reverted_pass_rate is not None and rev.head_pass_rate is not None
        assert rev.reverted_pass_rate > rev.head_pass_rate
    finally:
        ev.close()
    assert {p: (repo / p).read_text() for p in changes.files} == kb_before  # the user's files never touched
    assert not copy.exists()  # the copy the agent ran in is gone


@pytest.mark.parametrize("used", [True, False], ids=["used", "no-used"])
def test_a_mixed_hunk_keeps_its_fix_and_restores_the_case_it_broke(tmp_path, pg_server, settings, used):
    repo, changes, ev, head, base = evaluate_pr(tmp_path, "mixed", used, pg_server, settings)
    try:
        (hunk,) = [h for f in pr_diff(repo, "HEAD~1", "HEAD") for h in f.hunks]
        assert (hunk.old_count, hunk.new_count) == (2, 2)  # git writes one hunk...
        assert [c.where for c in changes.changes] == ["line 4", "line 5"]  # ...of two changes
        assert (base["buyers"], head["buyers"]) == ("failed", "passed")  # the pull request fixes `buyers`
        regressed = sorted(i for i in IDS if base[i] == "passed" and head[i] != "passed")
        assert regressed == ["big"]
        result = attribute(regressed, changes, ev)
        ((cause,),) = [result.causes("big")]
        assert cause.text.endswith("+big_orders: SELECT count(*) FROM orders WHERE amount > 1000")
        rev = partial_revert(result, changes, ev, head=head, regressed=regressed)
        assert rev.holds, rev.reason
        verdicts = {c.id: c.verdict for c in rev.cases}
        assert verdicts["buyers"] == "kept" and verdicts["big"] == "restored"
        assert set(verdicts.values()) == {"kept", "restored"}
        assert rev.reverted_pass_rate == 1.0
        text = rev.files[f"{FOLDER}/kb/metrics.yaml"]
        assert "buyers: SELECT count(DISTINCT customer) FROM orders\n" in text  # the fix is kept
        assert "big_orders: SELECT count(*) FROM orders WHERE amount > 100\n" in text
        assert [c.where for c in rev.kept] == ["line 4"] and len(rev.reverted) == 1  # not a whole revert
        body = [ln for ln in rev.diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
        assert body == [
            "-big_orders: SELECT count(*) FROM orders WHERE amount > 1000",
            "+big_orders: SELECT count(*) FROM orders WHERE amount > 100",
        ]
    finally:
        ev.close()


def test_a_regression_the_kb_did_not_cause_is_named_so(tmp_path: Path, pg_server, settings: Settings):
    repo, changes, ev, head, base = evaluate_pr(tmp_path, "three_hunks", True, pg_server, settings)
    try:
        result = attribute(["buyers"], changes, ev)  # fails at the base too: no KB revert helps
        assert result.of("buyers").verdict == "not_kb" and result.of("buyers").changes == ()
        rev = partial_revert(result, changes, ev, head=head, regressed=["buyers"])
        assert not rev.holds and "nothing to revert" in rev.reason
    finally:
        ev.close()


def test_find_causes_is_the_one_call_a_check_makes(tmp_path: Path, pg_server, settings: Settings):
    """As run_check calls it: the diff, both trees, the head run's statuses, the comparison's regressed ids."""
    repo, base_sha, head_sha = make_repo(tmp_path, "mixed", used=False)
    config = load_config(repo / FOLDER / "sqlcanary.yml")
    suite = load_suite(repo / FOLDER)
    head = {"big": "failed", "buyers": "passed", **{i: "passed" for i in IDS if i not in ("big", "buyers")}}
    diff = pr_diff(repo, base_sha, head_sha)
    with worktree(repo, base_sha, label="base") as base_root:
        request = CauseRequest(
            diff,
            config=config,
            base_root=base_root,
            head_root=repo,
            suite=suite,
            head=head,
            regressed=["big"],
            base_pass_rate=6 / 7,
        )
        found = find_causes(request, server=pg_server, settings=settings)
    assert [c.where for c in found.attribution.causes("big")] == ["line 5"]
    assert found.revert.holds and found.revert.restored == ("big",)
    assert (found.revert.base_pass_rate, found.revert.head_pass_rate, found.revert.reverted_pass_rate) == (
        6 / 7,
        6 / 7,
        1.0,
    )
    assert found.agent_calls == found.attribution.agent_calls + found.revert.agent_calls
    request = CauseRequest(
        diff[:0], config=config, base_root=repo, head_root=repo, suite=suite, head=head, regressed=["big"]
    )
    no_kb = find_causes(request, server=pg_server, settings=settings)
    assert no_kb.agent_calls == 0 and no_kb.attribution.of("big").verdict == "not_kb"
    assert not no_kb.revert.holds


def test_the_answer_cache_key_covers_the_whole_copy_whatever_agent_inputs_says(
    tmp_path: Path, pg_server, settings: Settings
):
    """The head's agent is the pull request's: a file outside `agent.inputs` (a module it imports, data it reads)
    that changes between two pushes must change the key its answers are cached under; the same tree keeps it."""
    repo, _, ev, _, _ = evaluate_pr(tmp_path, "three_hunks", True, pg_server, settings)
    config = ev._config.model_copy(
        update={"agent": ev._config.agent.model_copy(update={"inputs": ("agent.py",)})}
    )

    def key(root: Path) -> str:
        other = TreeEvaluator(
            root=root, changes=ev.changes, config=config, suite=ev.suite, server=pg_server, settings=settings
        )
        with other:
            fp = other._options().agent_fingerprint
        assert fp
        return fp

    try:
        first = key(repo)
        assert key(repo) == first  # the same tree: the same key, so a later check reuses the answers
        (repo / FOLDER / "helper.txt").write_text("the agent may read this\n")
        assert key(repo) != first
    finally:
        ev.close()
