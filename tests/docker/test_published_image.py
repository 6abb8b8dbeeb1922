"""The release path, offline: the image is pushed to a local registry (Debian's docker-registry on localhost:5000,
started by `.ci/docker-setup`, standing in for ghcr.io), `.ci/pin_action_image.py` rewrites action.yml to run it
by digest (`image: docker://localhost:5000/...@sha256:...`, what the release workflow commits), and act runs a
`push` workflow whose step is `uses: ./` on a repository holding that action.yml and no Dockerfile and no sources
of the action: the job can only pull the published image, by its digest, and run it.

The engine keeps the image's layers (the tag the tests build, sqlcanary:dev, holds them), so the pull fetches the
manifest only; before act runs, the engine holds no reference to that digest, so act has to pull it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.tinyrepo import CONFIG, git, make_tiny_repo

from .conftest import BASE_IMAGE, REPO, docker, unavailable

pytestmark = pytest.mark.docker

REGISTRY = f"localhost:{os.environ.get('SQLCANARY_REGISTRY_PORT', '5000')}"
WORKFLOW_NAME = f"sqlcanary-published-{secrets.token_hex(4)}"
WORKFLOW = """\
name: {name}
on: push
permissions:
  contents: read
jobs:
  baseline:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4  # act copies its working directory instead (nothing is fetched)
      - id: canary
        uses: ./
        with:
          config: {config}
          comment: "off"
      - name: read the outputs
        env:
          PASS_RATE: ${{{{ steps.canary.outputs.pass-rate-head }}}}
        run: echo "later step read pass-rate-head=$PASS_RATE"
"""


def _registry_up() -> bool:
    try:
        with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def published(sqlcanary_image: str) -> Iterator[tuple[str, str]]:
    """(reference by digest, image id) of the image pushed to the local registry; the engine keeps no reference
    to it afterwards (the layers stay, under the build's own tag)."""
    if not _registry_up():
        unavailable(f"no image registry answers on {REGISTRY} (run .ci/docker-setup)")
    repo = f"{REGISTRY}/sqlcanary-test-{secrets.token_hex(4)}/sqlcanary"
    docker("tag", sqlcanary_image, f"{repo}:release", check=True)
    pushed = docker("push", "-q", f"{repo}:release", timeout=900)
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    info = json.loads(docker("image", "inspect", f"{repo}:release", check=True).stdout)[0]
    ref = next(d for d in info["RepoDigests"] if d.startswith(repo + "@sha256:"))
    docker("rmi", f"{repo}:release", ref)
    assert docker("image", "inspect", ref).returncode != 0  # gone from the engine: act must pull it
    yield ref, info["Id"]
    docker("rmi", ref)


def test_the_pin_script_rewrites_the_image_line_only(tmp_path: Path) -> None:
    ref = f"{REGISTRY}/acme/sqlcanary@sha256:{'0' * 64}"
    out = tmp_path / "action.yml"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / ".ci" / "pin_action_image.py"),
            ref,
            "--action",
            str(REPO / "action.yml"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    before, after = (REPO / "action.yml").read_text().splitlines(), out.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("  image: Dockerfile", f"  image: docker://{ref}")]


def test_the_action_runs_the_published_image_by_digest(
    published: tuple[str, str], act_binary: str, tmp_path: Path
) -> None:
    ref, image_id = published
    repo = tmp_path / "agent"
    repo.mkdir()
    pin = subprocess.run(
        [
            sys.executable,
            str(REPO / ".ci" / "pin_action_image.py"),
            ref,
            "--action",
            str(REPO / "action.yml"),
            "--out",
            str(repo / "action.yml"),
        ],
        capture_output=True,
        text=True,
    )
    assert pin.returncode == 0, pin.stderr
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "baseline.yml").write_text(
        WORKFLOW.format(name=WORKFLOW_NAME, config=CONFIG)
    )
    make_tiny_repo(repo)  # commits the pinned action.yml, the workflow, the suite and the agent
    git(repo, "remote", "add", "origin", "https://github.com/acme/agent.git")  # act's GITHUB_REPOSITORY
    assert not (repo / "Dockerfile").exists() and not (repo / "bot").exists()
    sha = git(repo, "rev-parse", "HEAD")
    side = {"full_name": "acme/agent", "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps({"ref": "refs/heads/main", "before": "0" * 40, "after": sha, "repository": side})
    )
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(
        [
            act_binary,
            "push",
            "-e",
            str(event),
            "-W",
            ".github/workflows/baseline.yml",
            "--json",
            "-P",
            f"ubuntu-latest={BASE_IMAGE}",
            "--pull=false",
            "--action-offline-mode",
            "--network",
            "host",
            "--no-cache-server",
            "--container-daemon-socket",
            "-",
            "--rm",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")},
    )
    messages = [str(_json(line).get("msg", "")) for line in result.stdout.splitlines()]
    text = "\n".join(messages) + result.stderr
    assert result.returncode == 0, text[-6000:]
    assert any(f"docker pull image={ref}" in m for m in messages), text[-6000:]  # pulled, by its digest
    assert any(f"docker run image={ref}" in m for m in messages), text[-6000:]  # and ran that reference
    assert not any("docker build" in m for m in messages), text[-6000:]
    assert any("baseline: 3/3 passed" in m for m in messages), text[-6000:]  # the entry point did the work
    assert any("later step read pass-rate-head=1" in m for m in messages), text[-6000:]
    pulled = json.loads(docker("image", "inspect", ref, check=True).stdout)[0]
    assert pulled["Id"] == image_id  # the exact image that was pushed


def _json(line: str) -> dict[str, object]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return {"msg": line}
    return value if isinstance(value, dict) else {"msg": line}
