"""examples/workflows/sqlcanary-services.yml through act: a pull request's check of the shop suite (benchmarks/shop,
at `evals/suite`) on a `services: postgres` container, reached through `database-url`, with the job's network as a
runner makes it.

The workflow act runs is the example with two lines changed (act_local.example asserts each occurs once):
- `name:`, made unique per session: act names the job's containers and network after it (test_act.py);
- the service's `image:`: no registry is reachable here, so the official `postgres:17` (pinned by digest in the
  example) is replaced by `sqlcanary-postgres:dev`, Debian's `postgresql` package on the debootstrapped base with
  an entrypoint that honours POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB as the official one does
  (.ci/postgres/, built by `.ci/docker-setup`). Its `env:` and health check are the example's.
The action comes from this repository through `--local-repository sqlcanary/sqlcanary@v1=...`, and
actions/upload-artifact is a stand-in (tests/support/actions/) that copies `sqlcanary-results/` to a folder the
test reads.

Networking. On a runner every container of the job (the service, the container action) is on the job's network,
where the service answers to `postgres`. act makes that network for a job with services and puts the services
on it, but a job without `container:` runs on `--network` (default the host's), and a container action shares
the job container's network: so the test names act's own network (`act_local.job_network`) as `--network`, and
the job, the action and the service meet there; act finds it made and removes it at the end. dockerd runs with
`--bridge=none --iptables=false` (.ci/docker-setup), which leaves user-defined bridge networks and their DNS
working, with no route out: no dockerd flag had to change. The fake GitHub and the git server of the test listen
on that network's gateway address, the host's side of the bridge, where the job's containers reach them.

The proof that the database was the service's: the head's RunResult (uploaded) records the server's version,
Debian's PostgreSQL 17 there, where the image's embedded server is another build (18).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.git_http import GitHttpServer
from tests.support.github_fixtures import ACTIONS_TOKEN, REPO, TOKENS
from tests.support.tinyrepo import git

from .act_local import ActCommand, action_folder, example, job_network, local_repositories
from .conftest import BASE_IMAGE, docker, unavailable
from .conftest import REPO as SOURCE
from .test_act import ActRun, _event, _has_commit

pytestmark = pytest.mark.docker

POSTGRES_IMAGE = "sqlcanary-postgres:dev"
WORKFLOW_NAME = f"sqlcanary-services-{secrets.token_hex(4)}"
JOB_ID, JOB_NAME = "check", "sqlcanary check"
WORKFLOW_FILE = ".github/workflows/sqlcanary.yml"
OFFICIAL_IMAGE = "image: postgres:17@sha256:d74eeac9a635390a49bc21bd49fccd973de707e2a53a76ac49b552b8712ec46f"
REGRESSION = "missing_tz_filter"  # benchmarks/shop/regressions: breaks the DAU cases
SHOP = SOURCE / "benchmarks" / "shop"
ACTION_STEP = "sqlcanary/sqlcanary@v1"  # act names a step without `name:` after its `uses:`


@pytest.fixture(scope="session")
def postgres_image(docker_engine: None) -> str:
    if docker("image", "inspect", POSTGRES_IMAGE, timeout=30).returncode != 0:
        built = subprocess.run(
            [str(SOURCE / ".ci" / "docker-setup"), "postgres"],
            capture_output=True,
            text=True,
            timeout=1200,
            env={**os.environ, "CI": "true"},
        )
        if built.returncode != 0 or docker("image", "inspect", POSTGRES_IMAGE).returncode != 0:
            unavailable(
                f"the {POSTGRES_IMAGE} image could not be built: {(built.stdout + built.stderr)[-1500:]}"
            )
    return POSTGRES_IMAGE


def _regressed_cases() -> list[str]:
    listed = subprocess.run(
        [sys.executable, str(SHOP / "regressions" / "apply.py"), "--list"], capture_output=True, text=True
    )
    block = listed.stdout.split(f"{REGRESSION}:", 1)[1]
    return block.split("breaks:", 1)[1].split("\n", 1)[0].replace(",", " ").split()


def _repository(root: Path, workflow: str) -> tuple[Path, str, str]:
    """`acme/agent`: `main` holds the workflow and the shop suite at evals/suite; `regress` plants REGRESSION in
    its KB."""
    src = root / "src"
    shutil.copytree(SHOP, src / "evals" / "suite", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (src / WORKFLOW_FILE).parent.mkdir(parents=True)
    (src / WORKFLOW_FILE).write_text(workflow)
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-qm", "shop suite and the services workflow")
    base_sha = git(src, "rev-parse", "HEAD")
    subprocess.run(
        [
            sys.executable,
            str(SHOP / "regressions" / "apply.py"),
            REGRESSION,
            "--kb",
            str(src / "evals/suite/kb"),
        ],
        check=True,
        capture_output=True,
    )
    git(src, "commit", "-qam", f"kb: {REGRESSION}")
    head_sha = git(src, "rev-parse", "HEAD")
    bare = root / "served" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(root, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(src, "push", "-q", str(bare), f"{base_sha}:refs/heads/main", f"{head_sha}:refs/heads/regress")
    return bare, base_sha, head_sha


@dataclass(frozen=True)
class Outcome:
    fake: FakeGitHub
    git_server: GitHttpServer
    head_sha: str
    had_base: bool
    network: str
    run: ActRun
    artifacts: Path

    def action_log(self) -> str:
        return "\n".join(str(line.get("msg", "")).rstrip() for line in self.run.step(ACTION_STEP))

    def runs(self) -> dict[str, dict]:
        """The RunResults in the uploaded `sqlcanary-results` artifact, by file name."""
        found = {}
        for path in sorted((self.artifacts / "sqlcanary-results").rglob("*.json")):
            data = json.loads(path.read_text())
            if isinstance(data, dict) and {"meta", "summary", "cases"} <= data.keys():
                found[path.name] = data
        return found


def _gateway(network: str) -> str:
    shown = docker(
        "network", "inspect", network, "--format", "{{(index .IPAM.Config 0).Gateway}}", check=True
    )
    return shown.stdout.strip()


@pytest.fixture(scope="module")
def checked(
    tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path, act_binary: str, postgres_image: str
) -> Iterator[Outcome]:
    root = tmp_path_factory.mktemp("act-services")
    workflow = example(
        "sqlcanary-services.yml",
        {"name: sqlcanary\n": f"name: {WORKFLOW_NAME}\n", OFFICIAL_IMAGE: f"image: {postgres_image}"},
    )
    bare, base_sha, head_sha = _repository(root, workflow)
    action_dir = action_folder(root / "action", wheelhouse)
    # act's job network, made now so that its gateway is known before the servers start. act removes a job's
    # network before the job when no container is on it, then makes a new one (on another subnet): a container
    # of the test's holds it, and act uses it as found (and leaves it, still in use, at the end).
    network = job_network(WORKFLOW_NAME, JOB_ID, JOB_NAME)
    holder = f"sqlcanary-network-holder-{secrets.token_hex(4)}"
    docker("network", "create", "--driver", "bridge", network, check=True)
    try:
        docker(
            "run",
            "-d",
            "--rm",
            "--name",
            holder,
            "--network",
            network,
            BASE_IMAGE,
            "sleep",
            "3600",
            check=True,
        )
        gateway = _gateway(network)
        with (
            FakeGitHub(tokens=dict(TOKENS), bind=gateway) as fake,
            GitHttpServer(bare.parents[1], token=ACTIONS_TOKEN, bind=gateway) as git_server,
        ):
            fake.state.add_repo(REPO, sha=base_sha)
            fake.state.add_pull(fake.base_url, REPO, head="regress", head_sha=head_sha, base_sha=base_sha)
            workdir = root / "agent"
            git(root, "clone", "-q", "--depth", "1", "--branch", "regress", bare.as_uri(), str(workdir))
            git(workdir, "remote", "set-url", "origin", git_server.url(REPO))
            event = root / "event.json"
            event.write_text(json.dumps(_event(base_sha, head_sha)))
            act = ActCommand(
                act_binary,
                workdir=workdir,
                workflow=WORKFLOW_FILE,
                event_name="pull_request",
                event=event,
                home=root / "home",
                artifacts=root / "artifacts",
                network=network,
                args=[
                    *local_repositories(workflow, action_dir),
                    "--github-instance",
                    git_server.host,
                    "--env",
                    f"GITHUB_SERVER_URL=http://{git_server.host}",
                    "--env",
                    f"GITHUB_API_URL={fake.base_url}",
                    "-s",
                    "GITHUB_TOKEN",
                ],
                env={"GITHUB_TOKEN": ACTIONS_TOKEN},
            )
            run = act.run()
            (root / "act.log").write_text(run.text)  # the whole log, for a failure's reader
            yield Outcome(
                fake, git_server, head_sha, _has_commit(workdir, base_sha), network, run, root / "artifacts"
            )
        assert fake.errors == [], f"the fake GitHub saw requests it does not know: {fake.errors}"
    finally:
        docker("rm", "-f", holder)
        docker("network", "rm", network)


def test_the_check_fails_the_job_on_the_planted_regression(checked: Outcome) -> None:
    run = checked.run
    assert run.code != 0, run.text[-8000:]
    log = checked.action_log()
    assert run.said(r"Failure - Main sqlcanary/sqlcanary@v1"), log[-8000:]
    assert "exit with `FAILURE`: 1" in log, log[-8000:]  # the gate (1), not bad input (2) or a bug (3)
    assert not run.said(r"Failure - (Set up|Pre|Main actions/)"), run.text[-8000:]


def test_the_evaluation_ran_on_the_service_not_the_embedded_server(checked: Outcome) -> None:
    runs = checked.runs()
    assert runs, checked.action_log()[-6000:]
    for name, run in runs.items():
        version = run["meta"]["server_version"]
        assert version.startswith("17.") and "Debian" in version, (name, version)  # the embedded server is 18
        assert len(run["cases"]) == 84, name


def test_one_sticky_comment_names_every_regressed_case(checked: Outcome) -> None:
    [comment] = checked.fake.state.repo(REPO).comments.values()
    assert "<!-- sqlcanary:comment:" in comment["body"]
    regressed = _regressed_cases()
    assert len(regressed) == 15
    missing = [case for case in regressed if case not in comment["body"]]
    assert missing == [], comment["body"][-4000:]
    [check] = checked.fake.state.repo(REPO).check_runs.values()
    assert check["conclusion"] == "failure" and check["head_sha"] == checked.head_sha


def test_the_base_commit_came_from_the_git_server_on_the_job_network(checked: Outcome) -> None:
    assert not checked.had_base
    assert any(r.path.endswith("/git-upload-pack") and r.authorized for r in checked.git_server.requests)


def test_act_removes_the_service_and_the_job_containers(checked: Outcome) -> None:
    """`--rm`: the job failed, and act would otherwise keep its containers; the network is the test's (above)."""
    prefix = f"act-{WORKFLOW_NAME}"
    containers = docker("ps", "-a", "--format", "{{.Names}}", "--filter", f"name={prefix}", check=True).stdout
    assert containers.split() == []


def _psql(container: str, password: str, sql: str) -> subprocess.CompletedProcess[str]:
    command = ["psql", "-h", "127.0.0.1", "-U", "canary", "-d", "shop", "-Atc", sql]
    return docker("exec", "-e", f"PGPASSWORD={password}", container, *command, timeout=60)


def test_the_service_image_honours_the_official_images_variables(postgres_image: str) -> None:
    """POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB as the official image reads them: the user is the
    superuser, the database exists, a TCP connection needs the password; without a password it refuses to start."""
    name = f"sqlcanary-pg-{secrets.token_hex(4)}"
    env = ["-e", "POSTGRES_USER=canary", "-e", "POSTGRES_PASSWORD=s3cret", "-e", "POSTGRES_DB=shop"]
    docker("run", "-d", "--rm", "--name", name, "--network", "none", *env, postgres_image, check=True)
    try:
        ready = False
        for _ in range(60):
            ready = _psql(name, "s3cret", "SELECT 1").returncode == 0
            if ready:
                break
            time.sleep(0.5)
        assert ready, docker("logs", name).stderr[-2000:]
        shown = _psql(
            name,
            "s3cret",
            "SELECT current_user, current_database(), rolsuper FROM pg_roles WHERE rolname = current_user",
        )
        assert shown.stdout.strip() == "canary|shop|t", shown
        wrong = _psql(name, "wrong", "SELECT 1")
        assert wrong.returncode != 0 and "password authentication failed" in wrong.stderr, wrong
    finally:
        docker("rm", "-f", name)
    refused = docker("run", "--rm", "--network", "none", postgres_image, timeout=120)
    assert refused.returncode != 0 and "POSTGRES_PASSWORD" in refused.stderr, refused
