"""What a job that uses the action pays before and during its work, each figure beside its reference, one run.

- the start with `image: Dockerfile` (what the runner and act do for `uses: ./` or a tag whose action.yml builds):
  a cold build (`--no-cache`) and a build from the layer cache, each plus the first container run;
- the start with the published image (action.yml `image: docker://REGISTRY/...@sha256:...`, as the release
  workflow writes it): a pull by digest from the local registry (Debian's docker-registry, which
  `.ci/docker-setup` starts on localhost:5000) of the `--no-cache` build after every reference to it is removed
  (layers with the same content as another image's, such as the base, stay in the engine and are not fetched),
  plus the first container run; and the same when the engine already has it (a runner that ran it before).
  Aim: < 5 s. Figures on a loaded machine swing: compare the ratios, and run it twice;
- the pull-request check in the container (the shop example, wrong_synonym planted; the image's entry point on a
  pull_request event) cold and warm, beside `sqlcanary check` on the host cold and warm. Between the container
  runs the workspace's cache is given to another uid, as actions/cache restores it. Aim: warm within 1.3x host.
  For reference: a warm run whose server loads the fixtures afresh (SQLCANARY_PG_SEED emptied: the image's own
  data directory, the behaviour before the server's data moved to the cache).

"The first container run" is the entry point (`sqlcanary action`) up to its exit on an empty environment: the
container's creation and the Python start. Needs `.ci/docker-setup` (engine, registry, wheelhouse). Usage:
    python benchmarks/perf/action_start.py [--registry localhost:5000]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import action_image as ai  # the sibling script: build context, timing, the check's repository

RESTORED_UID = 1001  # the runner's user on GitHub's hosted runners: who owns a restored cache


def first_run(image: str) -> float:
    """The entry point on an empty environment: it exits 2 (no event) once Python and the package are up."""
    return ai.timed(["docker", "run", "--rm", "--network", "none", image], ok=(2,))[0]


def push(tag: str, registry: str) -> str:
    """Push `tag` to the registry; its reference by digest."""
    repo = f"{registry}/sqlcanary-bench-{secrets.token_hex(3)}/sqlcanary"
    ai.timed(["docker", "tag", tag, f"{repo}:bench"])
    ai.timed(["docker", "push", "-q", f"{repo}:bench"])
    digests = ai.timed(["docker", "image", "inspect", "-f", "{{json .RepoDigests}}", f"{repo}:bench"])[
        1
    ].stdout
    ref = next(d for d in json.loads(digests) if d.startswith(repo + "@"))
    ai.timed(["docker", "rmi", f"{repo}:bench"])
    return ref


def forget(*refs: str) -> None:
    subprocess.run(["docker", "rmi", *refs], capture_output=True, check=False)


def restore_as_runner(repo: Path) -> None:
    """What actions/cache leaves: the cache folder owned by the runner's user."""
    for path in (repo / ".sqlcanary", *(repo / ".sqlcanary").rglob("*")):
        os.chown(path, RESTORED_UID, RESTORED_UID, follow_symlinks=False)


def container_check(image: str, repo: Path, event: Path, *, keep_data: bool = True) -> float:
    """action_image.container_check; `keep_data=False` empties SQLCANARY_PG_SEED, so the server runs on the
    image's own data directory and loads the fixtures afresh (the behaviour before the data moved to the cache)."""
    if keep_data:
        return ai.container_check(image, repo, event)
    real = ai.timed

    def timed(cmd: list[str], **kwargs: object) -> tuple[float, subprocess.CompletedProcess[str]]:
        return real([*cmd[:-1], "-e", "SQLCANARY_PG_SEED=", cmd[-1]], **kwargs)  # type: ignore[arg-type]

    ai.timed = timed  # type: ignore[assignment]
    try:
        return ai.container_check(image, repo, event)
    finally:
        ai.timed = real


def clean(repo: Path, image: str) -> None:
    """Remove the container's results and cache (root- or runner-owned) before the host's runs."""
    subprocess.run(
        ["docker", "run", "--rm", "-v", f"{repo}:/w", "--entrypoint", "rm", image, "-rf", "/w/.sqlcanary"],
        capture_output=True,
        check=False,
    )
    shutil.rmtree(repo / "sqlcanary-results", ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--registry", default="localhost:5000", help="the local registry (default %(default)s)"
    )
    args = parser.parse_args()
    tag = f"sqlcanary:bench-start-{secrets.token_hex(3)}"
    with tempfile.TemporaryDirectory(prefix="sqlcanary-start-bench-") as tmp:
        root = Path(tmp)
        ctx = ai.build_context(root)
        cold_build, steps = ai.build(ctx, tag, no_cache=True)
        cold_first = first_run(tag)
        cached_build, _ = ai.build(ctx, tag, no_cache=False)
        cached_first = first_run(tag)
        ref = push(tag, args.registry)  # the --no-cache build: its layers are this image's alone
        forget(tag, ref)
        pull_cold = ai.timed(["docker", "pull", "-q", ref])[0]
        pub_first = first_run(ref)
        pull_warm = ai.timed(["docker", "pull", "-q", ref])[0]
        pub_warm_first = first_run(ref)
        dockerfile_cold = cold_build + cold_first
        dockerfile_cached = cached_build + cached_first
        published = pull_cold + pub_first
        published_warm = pull_warm + pub_warm_first
        print("the job's start (image obtained + the entry point's first run):")
        print(f"  image: Dockerfile, cold build     {dockerfile_cold:6.1f} s   ({steps} build steps ran)")
        print(
            f"  image: Dockerfile, layer cache    {dockerfile_cached:6.1f} s   "
            f"({dockerfile_cached / dockerfile_cold:.2f}x the cold build)"
        )
        print(
            f"  published image, pulled by digest {published:6.1f} s   (aim < 5 s; "
            f"{published / dockerfile_cold:.2f}x the cold build; pull {pull_cold:.1f} s + run {pub_first:.1f} s)"
        )
        print(f"  published image, already present  {published_warm:6.1f} s")

        repo, event = ai.pr_repo(root)
        c_cold = container_check(ref, repo, event)
        restore_as_runner(repo)
        c_warm = container_check(ref, repo, event)
        restore_as_runner(repo)
        c_warm2 = container_check(ref, repo, event)
        restore_as_runner(repo)
        c_fresh_server = container_check(ref, repo, event, keep_data=False)
        clean(repo, ref)
        h_cold = ai.host_check(repo, root / "check-cache")
        h_warm = ai.host_check(repo, root / "check-cache")
        for pgdata in (root / "check-cache").glob("pg*"):
            ai.stop_server(pgdata)
        warm = min(c_warm, c_warm2)
        print("the pull-request check (shop, wrong_synonym planted; container start included):")
        print(f"  container, cold                   {c_cold:6.1f} s   ({c_cold / h_cold:.2f}x host cold)")
        print(
            f"  container, cache restored         {warm:6.1f} s   (aim <= 1.3x host warm: {warm / h_warm:.2f}x; "
            f"runs {c_warm:.1f} s and {c_warm2:.1f} s)"
        )
        print(
            f"  container, cache restored, before {c_fresh_server:6.1f} s   (the image's data dir, fixtures "
            f"loaded afresh: {c_fresh_server / h_warm:.2f}x host warm)"
        )
        print(f"  host `sqlcanary check`, cold      {h_cold:6.1f} s")
        print(f"  host `sqlcanary check`, warm      {h_warm:6.1f} s")
        forget(ref)


if __name__ == "__main__":
    main()
