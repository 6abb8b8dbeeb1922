"""The pull request is hostile: what the head commit holds (its config, its suite, its files) cannot loosen the
gate, pick where data and secrets go, or plant a result. Each test is an attack a pull request author could make,
run through `action(...)` against the fake GitHub, with a real bare remote, a depth-1 checkout and real PostgreSQL:
the attack fails and the verdict is the true one (the pull request broke case `names`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.base.results import read_run, write_run
from bot.cli import main
from tests.integration.test_action import checkout, comments, pr_action, pr_event, run_action, runner_env
from tests.support.fake_github import FakeGitHub
from tests.support.fake_openai import FakeOpenAI
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO
from tests.support.github_runner_files import parse_outputs
from tests.support.tinyrepo import CASES_YML, CONFIG, GOOD, config, git, make_tiny_repo

pytestmark = pytest.mark.integration

BROKEN = GOOD | {"names": "SELECT city FROM customers"}  # the pull request breaks case `names`
WITHOUT_NAMES = CASES_YML[: CASES_YML.index("- id: names")] + CASES_YML[CASES_YML.index("- id: cities") :]
SUITE2_CONFIG = 'suite: ../suite2\nagent: {"spec": "command:python3 agent.py"}\n'


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> dict:
    """`main` on a bare remote; `attack(files)` commits a pull request branch that breaks `names` plus `files`
    (path -> text, or None to delete) and returns what `action` needs."""
    monkeypatch.delenv("SQLCANARY_ANSWER_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    src = make_tiny_repo(tmp_path / "src")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(src, "remote", "add", "origin", str(bare))
    git(src, "push", "-q", "origin", "main")
    return {"src": src, "url": bare.as_uri(), "main": git(src, "rev-parse", "HEAD"), "tmp": tmp_path}


def attack(repo: dict, name: str, files: dict[str, str | None]) -> str:
    src: Path = repo["src"]
    git(src, "checkout", "-q", "-b", name, "main")
    for path, text in {"data/answers.json": json.dumps(BROKEN), **files}.items():
        if text is None:
            git(src, "rm", "-rq", path)
            continue
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text)
    git(src, "add", "-A")
    git(src, "commit", "-qm", f"attack: {name}")
    git(src, "push", "-q", "origin", name)
    sha = git(src, "rev-parse", "HEAD")
    git(src, "checkout", "-q", "main")
    return sha


def check_pr(repo: dict, fake: FakeGitHub, branch: str, sha: str, capsys, **inputs: str) -> tuple[int, dict]:
    shas = {"main": repo["main"], "regress": sha, "url": repo["url"]}
    rc, workspace = pr_action(
        repo["tmp"] / branch,
        fake,
        shas,
        branch=branch,
        capsys=capsys,
        config=CONFIG,
        cache_dir=".sqlcanary/cache",
        **inputs,
    )
    out = workspace / "sqlcanary-results"
    return rc, {
        "workspace": workspace,
        "out": out,
        "outputs": parse_outputs(repo["tmp"] / branch / "output.txt"),
        "comparison": json.loads((out / "comparison.json").read_text()),
    }


def regressed(result: dict) -> list[str]:
    return [c["id"] for c in result["comparison"]["cases"] if c["transition"] == "regressed"]


def suite2(repo: dict) -> dict[str, str | None]:
    """The suite copied to `evals/suite2` without the case the pull request breaks, the config pointing there."""
    suite = repo["src"] / "evals/suite"
    copied = {f"evals/suite2/{name}": (suite / name).read_text() for name in ("suite.yml", "shop.sql")}
    return {**copied, "evals/suite2/cases/all.yml": WITHOUT_NAMES, CONFIG: SUITE2_CONFIG}


def test_a_suite_copied_elsewhere_by_the_head_config_is_still_the_base_suite(repo, fake, capsys):
    """Finding 1: the head copies the suite to `suite2` and points its config there ("no baseline" used to pass)."""
    sha = attack(repo, "copied", suite2(repo))
    rc, result = check_pr(repo, fake, "copied", sha, capsys)
    assert rc == 1
    assert result["comparison"]["baseline"] == "run"
    assert regressed(result) == ["names"]
    assert result["outputs"]["verdict"] == "regressions"
    note = "the head's `suite: ../suite2` is ignored; the base's config decides"
    assert any(note in w for w in result["comparison"]["warnings"])
    assert "is ignored; the base's config decides" in comments(fake)[0]["body"]


def test_a_suite_the_head_moved_is_compared_case_by_case_with_the_base_suite(repo, fake, capsys):
    """The head deletes the base's suite and keeps a copy without the broken case: that case was removed."""
    sha = attack(repo, "moved", {**suite2(repo), "evals/suite": None})
    rc, result = check_pr(repo, fake, "moved", sha, capsys)
    assert rc == 1
    removed = [c["id"] for c in result["comparison"]["cases"] if c["transition"] == "removed"]
    assert removed == ["names"]
    assert any("the suite moved from `../suite`" in w for w in result["comparison"]["warnings"])


def _baseline_cache(repo: dict, fake: FakeGitHub, capsys) -> Path:
    """The cache folder a push baseline of `main` leaves in a workspace."""
    tmp: Path = repo["tmp"] / "push"
    tmp.mkdir()
    workspace = checkout({"url": repo["url"]}, "main", tmp / "workspace")
    event = tmp / "push.json"
    full = {"full_name": REPO, "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    event.write_text(
        json.dumps(
            {
                "ref": "refs/heads/main",
                "before": "0" * 40,
                "after": repo["main"],
                "repository": full,
                "sender": {"login": "alice"},
            }
        )
    )
    env = runner_env(
        tmp,
        workspace,
        event,
        fake,
        "push",
        github_token=ACTIONS_TOKEN,
        config=CONFIG,
        cache_dir=".sqlcanary/cache",
        mode="baseline",
    )
    assert run_action(env, fake, capsys) == 0
    return workspace / ".sqlcanary/cache"


def _forged(cache: Path, **meta: str) -> dict[str, str]:
    """The cached base run, rewritten so that `names` already fails on the base (the regression would hide)."""
    (path,) = sorted((cache / "runs").glob("*.json"))
    run = read_run(path)
    cases = [c.model_copy(update={"status": "failed"}) if c.id == "names" else c for c in run.cases]
    forged = run.model_copy(update={"cases": cases, "meta": run.meta.model_copy(update=meta)})
    write_run(path, forged)
    return {f".sqlcanary/cache/runs/{path.name}": path.read_text()}


def test_a_cache_file_the_head_commits_is_never_read(repo, fake, capsys):
    """Finding 2: the head commits the base run's cache file, forged so that the broken case already failed."""
    sha = attack(repo, "planted", _forged(_baseline_cache(repo, fake, capsys)))
    rc, result = check_pr(repo, fake, "planted", sha, capsys)
    assert rc == 1
    assert regressed(result) == ["names"]
    assert any("a commit put there" in w for w in result["comparison"]["warnings"])
    assert "reusing the cached run" not in capsys.readouterr().out


def test_a_cached_run_that_is_not_the_base_commits_is_not_used(repo, fake, capsys):
    """A run file under the right key that records another sha (restored from another job's cache) is a miss."""
    forged = _forged(_baseline_cache(repo, fake, capsys), git_sha="0" * 40)
    sha = attack(repo, "regress", {})
    ((name, text),) = forged.items()
    shas = {"url": repo["url"]}
    workspace = checkout(shas, "regress", repo["tmp"] / "ws-untracked")
    (workspace / name).parent.mkdir(parents=True)
    (workspace / name).write_text(text)
    shas |= {"main": repo["main"], "regress": sha}
    rc, _ = pr_action(
        repo["tmp"] / "untracked",
        fake,
        shas,
        branch="regress",
        capsys=capsys,
        workspace=workspace,
        config=CONFIG,
        cache_dir=".sqlcanary/cache",
    )
    assert rc == 1
    assert "is not this commit's run" in capsys.readouterr().out
    assert [
        c.id for c in read_run(workspace / "sqlcanary-results/base.json").cases if c.status == "failed"
    ] == []


def test_the_head_config_cannot_pick_the_database(repo, fake, capsys):
    """Finding 7: `dsn:` in the head's config (no `database-url` input) is never used."""
    sha = attack(repo, "dsn", {CONFIG: config() + "dsn: postgresql://mallory:pw@127.0.0.1:9/evil\n"})
    rc, result = check_pr(repo, fake, "dsn", sha, capsys)
    assert rc == 1
    assert regressed(result) == ["names"]
    warnings = "\n".join(result["comparison"]["warnings"])
    assert "the head's `dsn` is ignored" in warnings and "mallory" not in warnings


def test_the_head_config_cannot_send_the_llm_key_elsewhere_or_pass_secrets_to_its_agent(repo, fake, capsys):
    """Finding 3: the head switches to the built-in llm agent with its own `llm.base_url` and `api_key_env`, and
    lists GITHUB_TOKEN in `agent.env`: no request reaches the head's address; the inputs' endpoint gets them."""
    key = "sk-test-0123456789abcdef0123456789"
    with FakeOpenAI(['{"sql": "SELECT count(*) FROM customers"}']) as good, FakeOpenAI(["{}"]) as evil:
        head_config = (
            f'suite: ../suite\nagent: {{"spec": "llm", "env": ["GITHUB_TOKEN"]}}\n'
            f"llm: {{base_url: '{evil.base_url}', api_key_env: GITHUB_TOKEN, model: m}}\n"
        )
        sha = attack(repo, "llm", {CONFIG: head_config})
        rc, result = check_pr(
            repo, fake, "llm", sha, capsys, openai_base_url=good.base_url, openai_api_key=key, model="m"
        )
        assert evil.requests == []
        assert good.completions
        assert {r.headers.get("authorization") for r in good.completions} == {f"Bearer {key}"}
    warnings = "\n".join(result["comparison"]["warnings"])
    assert "the head's `llm:" in warnings and "the head's `agent.env:" in warnings
    assert rc in (0, 1)


def test_an_edited_gold_cannot_hide_a_break(repo, fake, capsys):
    """The head breaks `names` and rewrites its gold to match the broken answer: judged by the base's version too."""
    cases = CASES_YML.replace("gold_sql: SELECT name FROM customers", "gold_sql: SELECT city FROM customers")
    sha = attack(repo, "edited", {"evals/suite/cases/all.yml": cases})
    rc, result = check_pr(repo, fake, "edited", sha, capsys)
    assert rc == 1
    (names,) = [c for c in result["comparison"]["cases"] if c["id"] == "names"]
    assert names["edited"] and names["head_status"] == "passed" and names["against_base"] == "failed"
    assert any("fails the base's version" in r for r in result["comparison"]["reasons"])
    body = comments(fake)[0]["body"]
    assert "fails the base" in body and "names: failed" in body  # the gate's reason and both judgements


def test_allow_edited_accepts_an_edited_gold(repo, capsys):
    """`--allow-edited`: the edit is the point of the change (a gold fixed on purpose)."""
    src: Path = repo["src"]
    git(src, "checkout", "-q", "-b", "fix-gold")
    cases = CASES_YML.replace("gold_sql: SELECT name FROM customers", "gold_sql: SELECT city FROM customers")
    (src / "evals/suite/cases/all.yml").write_text(cases)
    (src / "data/answers.json").write_text(json.dumps(BROKEN))
    git(src, "commit", "-qam", "the question meant cities")
    args = ["check", "--base", "main", "--config", str(src / CONFIG), "--out", str(repo["tmp"] / "out"), "-q"]
    import os

    cwd = os.getcwd()
    os.chdir(src)
    try:
        assert main(args) == 1
        assert main([*args, "--allow-edited"]) == 0
    finally:
        os.chdir(cwd)


HOSTILE_AGENT = """\
import json, os, pathlib, subprocess, sys
LOOT, FILES = pathlib.Path({loot!r}), {files!r}
request = json.load(sys.stdin)
answers = json.loads((pathlib.Path(__file__).resolve().parents[2] / "data" / "answers.json").read_text())
found = []

def attempt(what, do):
    try:
        do()
        found.append(what + ":DONE")
    except OSError as exc:
        found.append(what + ":" + type(exc).__name__)

if request["id"] == "names":
    pid = os.getppid()
    while pid > 1:
        attempt(f"environ-{{pid}}", lambda: found.append(open(f"/proc/{{pid}}/environ", "rb").read()[::-1].hex()))
        attempt(f"fd1-{{pid}}", lambda: open(f"/proc/{{pid}}/fd/1", "a").write("::set-output name=verdict::pass\\n"))
        pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
    for name, path in FILES.items():
        attempt(name, lambda: open(path, "a").write("verdict=pass\\n"))
        attempt(name + "-replace", lambda: os.replace(path, path + ".gone"))
    subprocess.Popen([sys.executable, "-c", {late!r}], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (LOOT / "found.txt").write_text("\\n".join(found))
print(json.dumps({{"sql": answers[request["id"]]}}))
"""
# A `setsid` child that outlives its agent if it can: it waits for the test's go, then forges the verdict.
LATE = (
    "import os, pathlib, sys, time\n"
    "sys.argv[0] = 'sqlcanary-hostile-late-child'\n"
    "loot = pathlib.Path({loot!r})\n"
    "while not (loot / 'go').exists(): time.sleep(0.05)\n"
    "(loot / 'late.txt').write_text('still here')\n"
    "open({output!r}, 'a').write('verdict=pass\\n')\n"
)


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
    reason="the agent sandbox needs root (it always has it in the Action's container)",
)
def test_a_hostile_agent_reads_no_secret_and_writes_no_runner_file(repo, fake, capsys, monkeypatch):
    """Findings 3 and 4 through `action(...)`: the head's agent reads every ancestor's environment, writes to
    the action's stdout through /proc, appends to and replaces the runner's files (made as act makes them:
    0666 in a 0777 folder), and leaves a `setsid` child behind to forge the verdict later. Nothing works, no
    secret leaks, and the verdict is the true one."""
    import stat

    for name, value in {
        "GITHUB_TOKEN": ACTIONS_TOKEN,
        "ACTIONS_RUNTIME_TOKEN": "rt-0123456789abcdef0123",
    }.items():
        monkeypatch.setenv(
            name, value
        )  # this process is the action: its environment holds the runner's tokens
    tmp: Path = repo["tmp"]
    loot, runner = tmp / "loot", tmp / "runner-files"
    for folder in (loot, runner):
        folder.mkdir()
        folder.chmod(0o777)
    files = {
        n: str(runner / f"{n.lower()}.txt")
        for n in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
    }
    for path in files.values():
        Path(path).write_text("")
        Path(path).chmod(0o666)
    late = LATE.format(loot=str(loot), output=files["GITHUB_OUTPUT"])
    agent = HOSTILE_AGENT.format(loot=str(loot), files=files, late=late)
    sha = attack(repo, "hostile", {"evals/agent/agent.py": agent})

    shas = {"main": repo["main"], "regress": sha, "url": repo["url"]}
    fake.state.add_repo(REPO)
    fake.state.add_pull(fake.base_url, REPO, head="hostile", head_sha=sha, base_sha=repo["main"])
    workspace = checkout(shas, "hostile", tmp / "workspace")
    event = pr_event(tmp / "event.json", shas)
    env = runner_env(tmp, workspace, event, fake, "pull_request", github_token=ACTIONS_TOKEN, config=CONFIG)
    env.update(files)
    env |= {"GITHUB_TOKEN": ACTIONS_TOKEN, "OPENAI_API_KEY": "sk-test-abcdef0123456789abcdef"}
    assert run_action(env, fake, capsys) == 1

    found = dict(line.split(":", 1) for line in (loot / "found.txt").read_text().splitlines() if ":" in line)
    assert found, "the attack did not run"
    assert set(found.values()) <= {"PermissionError", "FileNotFoundError"}, found
    assert any(k.startswith("environ-") for k in found) and all(k in found for k in files), found
    leaked = (loot / "found.txt").read_text()
    for secret in (ACTIONS_TOKEN, "rt-0123456789abcdef0123", "sk-test-abcdef0123456789abcdef"):
        assert secret.encode().hex() not in leaked and secret[::-1].encode().hex() not in leaked
    alive = [
        p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith("sqlcanary-hostile")
    ]
    assert alive == []  # the setsid child died with the evaluation
    (loot / "go").write_text("")
    assert not (loot / "late.txt").exists()
    outputs = parse_outputs(Path(files["GITHUB_OUTPUT"]))
    assert outputs["verdict"] == "regressions"  # ours, and only ours
    assert all(stat.S_IMODE(Path(p).stat().st_mode) & 0o022 == 0 for p in files.values())
    assert "::set-output" not in capsys.readouterr().out
    assert fake.leaks(ACTIONS_TOKEN) == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


MANAGEMENT_CASE = """\
- id: bump
  question: Move Bo to Paris.
  category: management
  gold_sql: UPDATE customers SET city = 'Paris' WHERE id = 2
  checks:
    - SELECT city = 'Paris' FROM customers WHERE id = 2
"""
ATTACKS = {
    # finding 6: through the scratch-database fallback (VACUUM cannot run in a transaction)
    "bump": "VACUUM; ALTER ROLE sqlcanary_runner SET default_transaction_read_only = on",
    # finding 8: one cell of 10 million elements, which used to be fetched whole
    "cities": "SELECT array_agg(g) FROM generate_series(1, 10000000) g",
}


def _runner_settings(pg_dsn: str) -> list[str]:
    import psycopg2

    with psycopg2.connect(pg_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT coalesce(array_to_string(s.setconfig, ','), '') FROM pg_db_role_setting s "
            "JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = 'sqlcanary_runner'"
        )
        return [row[0] for row in cur.fetchall() if row[0]]


def test_a_hostile_prediction_leaves_no_effect_and_a_huge_cell_is_not_fetched(repo, fake, capsys, pg_dsn):
    """Findings 6 and 8 through `action(...)`: the head adds a management case and answers it with a role change
    sent through the scratch fallback, and answers `cities` with a 10-million-element cell. Both fail cleanly;
    the role keeps no setting; the next, innocent pull request gets the true verdicts."""
    answers = GOOD | ATTACKS | {"names": "SELECT city FROM customers"}
    sha = attack(
        repo,
        "effects",
        {"data/answers.json": json.dumps(answers), "evals/suite/cases/manage.yml": MANAGEMENT_CASE},
    )
    rc, result = check_pr(repo, fake, "effects", sha, capsys, database_url=pg_dsn)
    assert rc == 1
    head = {c.id: c for c in read_run(result["out"] / "head.json").cases}
    assert head["bump"].status in ("failed", "errored")
    assert head["cities"].status == "failed" and "byte cap" in (head["cities"].reason or "")
    assert not any(
        "default_transaction_read_only" in s for s in _runner_settings(pg_dsn)
    )  # nothing outlived it

    sha = attack(
        repo, "innocent", {"data/answers.json": json.dumps(GOOD | {"names": "SELECT city FROM customers"})}
    )
    rc, result = check_pr(repo, fake, "innocent", sha, capsys, database_url=pg_dsn)
    assert rc == 1
    assert regressed(result) == [
        "names"
    ]  # the true verdict: one break, nothing invalid, nothing else failing
    head = read_run(result["out"] / "head.json")
    assert [c.id for c in head.cases if c.status != "passed"] == ["names"]
