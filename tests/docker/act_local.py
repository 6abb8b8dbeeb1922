"""What the act runs of the copyable workflows (examples/workflows/: test_act_services.py, test_act_sweep.py)
share: the action as act's `--local-repository` for `sqlcanary/sqlcanary@v1`, the upload/download-artifact
stand-ins (tests/support/actions/, a host folder bound to /act-artifacts in every container), the example turned
into the file act runs, and act's command line.

The workflows a team copies name the action by its release (`uses: sqlcanary/sqlcanary@v1`) and the artifact
actions by commit SHA; act cannot fetch any of them here, so each `uses:` is mapped to a local folder
(`--local-repository REF=DIR`): the action to a folder holding this repository's action files and the wheelhouse
its image is built from (act builds the image with no network), the artifact actions to the stand-ins.
`actions/checkout` of the workflow's own repository is never run by act: it copies its working directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .conftest import BASE_IMAGE
from .conftest import REPO as SOURCE
from .test_act import ActRun, _copy_action, _link_tree

ACTION_USES = "sqlcanary/sqlcanary@v1"
STANDINS = SOURCE / "tests" / "support" / "actions"
ARTIFACT_ACTIONS = ("actions/upload-artifact", "actions/download-artifact")
ARTIFACTS_MOUNT = "/act-artifacts"  # where the stand-ins keep the run's artifacts (tests/support/actions/)


def action_folder(dest: Path, wheelhouse: Path) -> Path:
    """The action as a release would hold it, plus `.wheelhouse/` for act's offline image build."""
    dest.mkdir(parents=True)
    _copy_action(dest)
    _link_tree(wheelhouse, dest / ".wheelhouse")
    return dest


def example(name: str, replacements: dict[str, str]) -> str:
    """examples/workflows/NAME with each replacement made; each must occur exactly once, so that a change of
    the example that the test's reason no longer fits fails here instead of testing something else."""
    text = (SOURCE / "examples" / "workflows" / name).read_text()
    for old, new in replacements.items():
        count = text.count(old)
        assert count == 1, f"examples/workflows/{name}: {old!r} occurs {count} times; adapt the act test"
        text = text.replace(old, new)
    return text


def local_repositories(workflow: str, action_dir: Path) -> list[str]:
    """`--local-repository` for every `uses:` of the workflow that act would fetch: the action and the
    artifact actions (by the exact reference the workflow pins)."""
    args = []
    uses = sorted(set(re.findall(r"^\s*(?:-\s+)?uses:\s*(\S+)", workflow, re.M)))
    for ref in uses:
        repo = ref.split("@", 1)[0]
        if ref == ACTION_USES:
            args += ["--local-repository", f"{ref}={action_dir}"]
        elif repo in ARTIFACT_ACTIONS:
            args += ["--local-repository", f"{ref}={STANDINS / repo.split('/', 1)[1]}"]
    return args


def container_name(*parts: str) -> str:
    """act's createContainerName (pkg/runner/run_context.go): the parts joined by `-`, every other character
    than [A-Za-z0-9] made `-`, `--` made `-`, cut to 63 characters, then `-` and the SHA-256 of the whole."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", "-".join(parts)).replace("--", "-")
    digest = hashlib.sha256(name.encode()).hexdigest()
    return f"{name[:63].strip('-')}-{digest}"


def job_network(workflow_name: str, job_id: str, job_name: str | None = None) -> str:
    """The network act makes for a job with `services:` (RunContext.networkName, from the workflow's name, the
    job's `name:` or else its id, and its id): its service containers join it, under their service's name as
    host name."""
    return f"{container_name('act', f'{workflow_name}/{job_name or job_id}')}-{job_id}-network"


@dataclass
class ActCommand:
    """act on one event of one workflow, offline, with the artifact folder bound into every container."""

    binary: str
    workdir: Path
    workflow: str  # path relative to workdir
    event_name: str
    event: Path
    home: Path
    artifacts: Path
    network: str = "host"
    args: list[str] = field(default_factory=list)  # --local-repository, --env, --github-instance, ...
    env: dict[str, str] = field(default_factory=dict)

    def run(self, timeout: float = 1500) -> ActRun:
        self.home.mkdir(exist_ok=True)
        self.artifacts.mkdir(exist_ok=True)
        command = [
            self.binary,
            self.event_name,
            "-e",
            str(self.event),
            "-W",
            self.workflow,
            "--json",
            "-P",
            f"ubuntu-latest={BASE_IMAGE}",
            "--pull=false",
            "--action-offline-mode",
            "--network",
            self.network,
            "--no-cache-server",
            "--container-daemon-socket",
            "-",
            "--rm",
            "--container-options",
            f"-v {self.artifacts}:{ARTIFACTS_MOUNT}",
            *self.args,
        ]
        result = subprocess.run(
            command,
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            # A fresh HOME keeps the user's ~/.actrc and act's action cache out of the test (test_act.py).
            env={
                **os.environ,
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                **self.env,
            },
        )
        lines = []
        for line in result.stdout.splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                lines.append({"msg": line})
        return ActRun(result.returncode, tuple(lines), result.stderr)
