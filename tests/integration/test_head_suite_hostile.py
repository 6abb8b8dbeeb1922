"""The head's suite is hostile too (issue 23): what a pull request provides besides its agent (its fixture, its
cases' setup, golds and checks, the SQL its agent returns to shadow what a check reads) runs with no more
privilege than a prediction. Each test is the attack, through `action(...)` as in test_trust_boundary.py (a
bare remote, a depth-1 checkout, real PostgreSQL, the fake GitHub), and the true verdict comes out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bot.base.errors import ConfigError
from tests.integration import test_trust_boundary as trust
from tests.support.github_fixtures import REPO
from tests.support.tinyrepo import CASES_YML, FIXTURE, GOOD, git

pytestmark = pytest.mark.integration

repo = trust.repo  # the fixture: `main` on a bare remote
attack, check_pr, regressed = trust.attack, trust.check_pr, trust.regressed

REMOVE_BO = {
    "id": "remove_bo",
    "question": "Remove the customer Bo.",
    "category": "management",
    "gold_sql": "DELETE FROM customers WHERE name = 'Bo'",
    "checks": [
        "SELECT count(*) = 1 FROM customers",
        {"sql": "SELECT name FROM customers", "expect": [["Ada"]]},
    ],
}
WRITE_GOOD = GOOD | {"remove_bo": "DELETE FROM customers WHERE name = 'Bo'"}


@pytest.fixture
def write_repo(repo: dict) -> dict:
    """`repo` whose `main` also has a write case, answered right."""
    src: Path = repo["src"]
    cases = yaml.safe_load(CASES_YML) + [REMOVE_BO]
    (src / "evals/suite/cases/all.yml").write_text(yaml.safe_dump(cases, sort_keys=False))
    (src / "data/answers.json").write_text(json.dumps(WRITE_GOOD))
    git(src, "commit", "-qam", "a write case")
    git(src, "push", "-q", "origin", "main")
    return repo | {"main": git(src, "rev-parse", "HEAD")}


@pytest.mark.parametrize(
    "line",
    [
        "\\! touch {marker}",
        "COPY customers TO PROGRAM 'touch {marker}';",
        "COPY (SELECT 'x') TO '{marker}';",
    ],
    ids=["psql-shell", "copy-to-program", "copy-to-file"],
)
def test_a_fixture_the_head_changed_runs_no_program_and_names_its_line(repo, fake, capsys, tmp_path, line):
    marker = tmp_path / "pwned"
    fixture = FIXTURE + line.replace("{marker}", str(marker)) + "\n"
    sha = attack(repo, "fixture", {"evals/suite/shop.sql": fixture})
    # The head's run (a child process) names the file and line on its stderr (tests/integration/
    # test_fixture_load.py pins the wording); the action stops with it, and `main` exits 2.
    with pytest.raises(ConfigError, match="evaluating the head .* failed with exit code 2"):
        check_pr(repo, fake, "fixture", sha, capsys)
    assert not marker.exists()
    runs = fake.state.repo(REPO).check_runs.values()
    assert all(r.get("conclusion") not in ("success", "neutral") for r in runs)


@pytest.mark.parametrize("link", [False, True], ids=["named", "linked"])
def test_a_fixture_path_that_means_another_file_to_root_is_not_loaded(repo, fake, capfd, link):
    """The head names as its fixture a path whose content depends on who opens it: `/proc/self/environ` is the
    head's reader's own (allow-listed) environment when the reader opens it, but the environment of the head's
    `sqlcanary run`, which holds the admin DSN, when that child does. Its first token used to come back in the
    load's syntax error. The run loads only the bytes the reader read (bot.base.fixture_files), so nothing of it
    is loaded or shown: the head's run stops naming the fixture, and no check passes."""
    suite = "name: tiny\ndatabases:\n  shop: " + ("shop.sql" if link else "/proc/self/environ") + "\n"
    sha = attack(repo, "environ", {"evals/suite/suite.yml": suite}) if not link else _linked(repo)
    with pytest.raises(ConfigError, match="evaluating the head .* failed with exit code 2"):
        check_pr(repo, fake, "environ", sha, capfd)
    err = capfd.readouterr().err
    # The reader read its own environment (its path resolved to its own pid, gone by now); the run reads
    # nothing else in its place, and nothing of an environment is shown.
    assert "environ: fixture: " in err
    assert "syntax error" not in err and "PATH" not in err and "DATABASE_URL" not in err
    runs = fake.state.repo(REPO).check_runs.values()
    assert all(r.get("conclusion") not in ("success", "neutral") for r in runs)


def _linked(repo: dict) -> str:
    """The `environ` branch: the suite's own `shop.sql` replaced by a symbolic link to /proc/self/environ."""
    src: Path = repo["src"]
    git(src, "checkout", "-q", "-b", "environ", "main")
    (src / "evals/suite/shop.sql").unlink()
    (src / "evals/suite/shop.sql").symlink_to("/proc/self/environ")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "attack: a linked fixture")
    git(src, "push", "-q", "origin", "environ")
    sha = git(src, "rev-parse", "HEAD")
    git(src, "checkout", "-q", "main")
    return sha


def test_an_agent_file_outside_the_checkout_is_never_read(repo, fake, capfd, tmp_path):
    """The head's agent is `predictions:` of a file only root may read, outside its checkout (here: the right
    answers, so reading it would pass the check). sqlcanary reads a `predictions:` file itself, as root; the
    head's reader settles it first, with the agent's privileges, and refuses it: the check stops, exit 2."""
    secret = tmp_path / "root-only" / "answers.jsonl"
    secret.parent.mkdir(mode=0o700)
    secret.write_text("".join(json.dumps({"id": k, "sql": v}) + "\n" for k, v in GOOD.items()))
    secret.chmod(0o600)
    config = f'suite: ../suite\nagent: {{"spec": "predictions:{secret}"}}\n'
    sha = attack(repo, "outside", {trust.CONFIG: config})
    with pytest.raises(ConfigError, match="outside the pull request's checkout"):
        check_pr(repo, fake, "outside", sha, capfd)
    runs = fake.state.repo(REPO).check_runs.values()
    assert all(r.get("conclusion") not in ("success", "neutral") for r in runs)


def test_setup_sql_that_ends_the_transaction_cannot_rewrite_the_run_data(repo, fake, capsys):
    """`COMMIT; UPDATE ...` in a head-added case's setup used to rewrite the customers for every later case, so
    the broken `names` answer (the cities) matched its gold. The setup now runs through the prediction guards."""
    evil = {
        "id": "aaa_setup",
        "question": "Touch nothing.",
        "category": "management",
        "setup_sql": ["COMMIT; UPDATE customers SET name = city; BEGIN"],
        "gold_sql": "UPDATE customers SET city = city",
        "checks": ["SELECT true"],
    }
    cases = yaml.safe_dump([evil, *yaml.safe_load(CASES_YML)], sort_keys=False)
    answers = json.dumps(trust.BROKEN | {"aaa_setup": "UPDATE customers SET city = city"})
    sha = attack(repo, "setup", {"evals/suite/cases/all.yml": cases, "data/answers.json": answers})
    rc, result = check_pr(repo, fake, "setup", sha, capsys)
    assert rc == 1
    assert regressed(result) == ["names"]
    (added,) = [c for c in result["comparison"]["cases"] if c["id"] == "aaa_setup"]
    assert added["head_status"] == "invalid"
    assert "transaction control (COMMIT) is not allowed" in added["reason"]


@pytest.mark.parametrize(
    "answer",
    [
        "CREATE TEMP VIEW customers AS SELECT * FROM public.customers WHERE name <> 'Bo'",
        "ALTER TABLE customers RENAME TO c0; CREATE VIEW customers AS SELECT * FROM c0 WHERE name <> 'Bo'",
        "CREATE SCHEMA sqlcanary_runner; "
        "CREATE VIEW sqlcanary_runner.customers AS SELECT * FROM public.customers WHERE name <> 'Bo'",
    ],
    ids=["temp-view", "renamed-table", "role-schema"],
)
def test_a_prediction_cannot_shadow_what_the_checks_read(write_repo, fake, capsys, answer):
    """The head's agent answers the write case with SQL that deletes nothing but makes its checks see a table
    without Bo: the case regresses."""
    sha = attack(write_repo, "shadow", {"data/answers.json": json.dumps(GOOD | {"remove_bo": answer})})
    rc, result = check_pr(write_repo, fake, "shadow", sha, capsys)
    assert rc == 1
    assert regressed(result) == ["remove_bo"]


def test_checks_the_head_loosened_are_judged_by_the_base_version_too(write_repo, fake, capsys):
    """The head answers the write case wrong and edits its checks so that anything passes: the case is edited,
    the head's answer is also judged by the base's checks, and the gate fails."""
    cases = yaml.safe_load(CASES_YML) + [REMOVE_BO | {"checks": ["SELECT true"]}]
    files = {
        "evals/suite/cases/all.yml": yaml.safe_dump(cases, sort_keys=False),
        "data/answers.json": json.dumps(GOOD | {"remove_bo": "UPDATE customers SET city = city"}),
    }
    sha = attack(write_repo, "loosened", files)
    rc, result = check_pr(write_repo, fake, "loosened", sha, capsys)
    assert rc == 1
    (case,) = [c for c in result["comparison"]["cases"] if c["id"] == "remove_bo"]
    assert case["head_status"] == "passed" and case["edited"] is True
    assert case["against_base"] == "failed"
    assert result["outputs"]["verdict"] != "pass"
