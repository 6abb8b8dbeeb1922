"""The head of a check is the pull request's agent: its answers are cached under a fingerprint of everything it could
read (every tracked file of its tree, untracked unignored ones, case files too, and the resolved config), never
under the `agent.inputs` globs a trusted run may narrow it to. The base's side and plain runs keep the old rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.base.results import RunMeta, RunResult, Summary, read_run, write_run
from bot.base.settings import Settings
from bot.cli import build_parser
from bot.config.gate_settings import GateSettings
from bot.config.model import Config, load_config
from bot.report.console import cache_line
from bot.run.fingerprint import AgentInputs, agent_fingerprint, config_digest
from bot.run.request import RunRequest
from bot.run.setup import cache_basis, choose_agent
from tests.support.tinyrepo import git, write

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)

SPEC = "command:python3 agent.py"
NARROW = ("agent.py",)  # the globs a team declared: they miss ../data/answers.json, which the agent reads
HEAD = AgentInputs(globs=NARROW, whole_tree=True)


def make_repo(root: Path) -> Path:
    """repo/evals (the config folder, the agent) reading repo/data/answers.json; cases in evals/suite/cases."""
    write(
        root,
        {
            "evals/agent.py": "import json; print(json.dumps({'sql': open('../data/answers.json').read()}))\n",
            "evals/sqlcanary.yml": f"agent: {{spec: '{SPEC}', inputs: [agent.py]}}\nsuite: suite\n",
            "evals/suite/suite.yml": "databases: {d: d.sql}\n",
            "evals/suite/cases/a.yml": "- {id: a, question: q, gold_sql: SELECT 1}\n",
            "data/answers.json": "SELECT 1\n",
            "README.md": "docs\n",
            ".gitignore": "*.log\n",
        },
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def fp(repo: Path, inputs: AgentInputs = HEAD, **kw) -> str | None:
    base = repo / "evals"
    case_files = (base / "suite" / "suite.yml", base / "suite" / "cases" / "a.yml")
    return agent_fingerprint(SPEC, {}, base, "", inputs=inputs, environ={}, exclude=case_files, **kw)


def edit(repo: Path, name: str, text: str = "something else\n") -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)


@pytest.mark.parametrize(
    "name,changes",
    [
        ("data/answers.json", True),  # outside `agent.inputs`: the head's fingerprint sees it all the same
        ("README.md", True),
        ("evals/suite/cases/a.yml", True),  # the agent could read every case file (a gold too)
        ("notes/untracked.txt", True),  # untracked anywhere in the tree
        ("evals/run.log", False),  # ignored
        ("evals/sqlcanary-results/run.json", False),  # sqlcanary's own output, untracked
        (".sqlcanary/cache/answers/ab/x.json", False),  # the cache
        ("out/head.json", False),  # the run's output folder (`outputs`)
    ],
)
def test_what_changes_the_head_fingerprint(tmp_path, name, changes):
    repo = make_repo(tmp_path / "repo")
    outputs = (repo / "out",)
    before = fp(repo, outputs=outputs)
    narrow = fp(repo, AgentInputs(globs=NARROW))
    edit(repo, name)
    after = fp(repo, outputs=outputs)
    assert before is not None and after is not None
    assert (after != before) is changes
    if name == "data/answers.json":  # the finding: the narrowed (trusted) fingerprint does not notice
        assert fp(repo, AgentInputs(globs=NARROW)) == narrow


def test_a_tracked_file_in_an_output_folder_counts_for_the_head(tmp_path):
    """A pull request cannot hide its agent's data in a folder named like sqlcanary's output."""
    repo = make_repo(tmp_path / "repo")
    edit(repo, "sqlcanary-results/answers.json", "SELECT 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "data where the output goes")
    before = fp(repo, outputs=(repo / "sqlcanary-results",))
    edit(repo, "sqlcanary-results/answers.json", "SELECT 2\n")
    git(repo, "commit", "-qam", "the second commit of the pull request")
    assert fp(repo, outputs=(repo / "sqlcanary-results",)) != before


def test_the_head_fingerprint_is_the_same_in_two_checkouts_of_one_commit(tmp_path):
    repo = make_repo(tmp_path / "repo")
    clone = tmp_path / "elsewhere" / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert fp(repo) == fp(clone) is not None
    a, b = load_config(repo / "evals/sqlcanary.yml"), load_config(clone / "evals/sqlcanary.yml")
    absolute = b.model_copy(update={"suite": str((clone / "evals/suite").resolve())})  # a moved suite
    assert config_digest(a) == config_digest(b) == config_digest(absolute)
    up_a, up_b = (c.model_copy(update={"suite": "../suite"}) for c in (a, b))  # outside the config's folder
    assert config_digest(up_a) == config_digest(up_b) != config_digest(a)
    assert fp(repo, config_fp=config_digest(a)) == fp(clone, config_fp=config_digest(b))


def test_the_resolved_config_and_the_spec_count_for_the_head(tmp_path):
    repo = make_repo(tmp_path / "repo")
    config = load_config(repo / "evals/sqlcanary.yml")
    stricter = config.model_copy(update={"gate": GateSettings(max_regressions=1)})
    assert config_digest(stricter) != config_digest(config)
    assert fp(repo, config_fp=config_digest(stricter)) != fp(repo, config_fp=config_digest(config))
    assert config_digest(config.model_copy(update={"dsn": "postgresql://u:pw@h/db"})) == config_digest(config)
    other = agent_fingerprint("command:python3 agent.py --fast", {}, repo / "evals", "", inputs=HEAD)
    assert other != fp(repo)


def test_the_head_fingerprint_is_never_the_trusted_one(tmp_path):
    """A head's cached answers are never those a base run (or a plain run) of the same files keyed."""
    repo = make_repo(tmp_path / "repo")
    assert fp(repo) not in (fp(repo, AgentInputs(globs=NARROW)), fp(repo, AgentInputs()))


def config_in(repo: Path) -> Config:
    return load_config(repo / "evals/sqlcanary.yml")


def test_only_the_head_side_is_fingerprinted_by_its_whole_tree(tmp_path):
    repo = make_repo(tmp_path / "repo")
    config = config_in(repo)
    for side in (None, "base"):
        choice = choose_agent(RunRequest(side=side), config, cwd=str(repo))
        assert choice.inputs == AgentInputs(globs=NARROW)
        assert cache_basis(choice) == "agent.inputs: 1 glob"
    head = choose_agent(RunRequest(side="head"), config, cwd=str(repo))
    assert head.inputs == AgentInputs(globs=NARROW, whole_tree=True)
    sha = git(repo, "rev-parse", "HEAD")
    assert cache_basis(head) == f"the whole head tree at {sha[:12]}"
    unset = config.model_copy(update={"agent": config.agent.model_copy(update={"inputs": None})})
    assert cache_basis(choose_agent(RunRequest(), unset, cwd=str(repo))) == "every file of the repository"


def test_check_tells_each_child_run_its_side():
    argv = RunRequest(suite="s", side="head").run_argv()
    assert argv[argv.index("--side") + 1] == "head"
    assert "--side" not in RunRequest(suite="s").run_argv()
    parsed = build_parser(["run", "s", "--side", "head"]).parse_args(["run", "s", "--side", "head"])
    assert RunRequest.from_args(parsed).side == "head"
    assert RunRequest.from_args(build_parser(["run"]).parse_args(["run", "s"])).side is None


def test_a_run_records_why_its_cached_answers_were_trusted_and_old_runs_still_read(tmp_path):
    meta = RunMeta(suite="s", suite_hash="h", agent_fingerprint="abc123", cache_hits=84, cache_basis="x")
    assert cache_line(meta) == "84 answer(s) from the answer cache (agent fingerprint abc123: x)"
    write_run(tmp_path / "new.json", RunResult(meta=meta, summary=Summary()))
    assert read_run(tmp_path / "new.json").meta.cache_basis == "x"
    old = RunResult(meta=meta.model_copy(update={"cache_basis": None}), summary=Summary())
    write_run(tmp_path / "old.json", old)
    assert "cache_basis" not in (tmp_path / "old.json").read_text()  # written exactly as before the field
    assert read_run(tmp_path / "old.json").meta.cache_basis is None


def test_settings_cache_folder_is_an_output_of_the_head_run(tmp_path):
    """A cache folder the workflow put elsewhere in the workspace (input `cache-dir`) never counts when untracked."""
    repo = make_repo(tmp_path / "repo")
    settings = Settings.from_environ({"SQLCANARY_CACHE_DIR": str(repo / "ci-cache")})
    before = fp(repo, outputs=(settings.cache_dir,))
    edit(repo, "ci-cache/answers/ab/x.json")
    assert fp(repo, outputs=(settings.cache_dir,)) == before
    assert fp(repo) != before
