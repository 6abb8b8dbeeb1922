"""What the container action costs, each figure beside the one it compares against, all from one run.

- the image size (the issue's aim: at most 400 MB; a naive Debian + venv + package probe was 584 MB);
- a cold build (`--no-cache`) against a rebuild after a change to one file in bot/ (only the last layers);
- `sqlcanary run benchmarks/shop` in a fresh container (the image's pre-initialised data directory), with an
  empty cache dir mounted (initdb at start), and with that cache dir mounted again (warm: templates and answers
  kept), against the same command on the host;
- the pull-request check as the runner runs it (the image's entry point, `sqlcanary action`, on a pull_request
  event: the shop example with a planted regression, base and head) cold and with its cache dir restored,
  against `sqlcanary check` on the host, cold and warm (the issue's aim: at most 15 s cold and 6 s warm).

Needs what `.ci/docker-setup` prepares (engine, debian:trixie-slim, wheelhouse). Usage:
    python benchmarks/perf/action_image.py [--skip-cold-build]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SQLCANARY = "/opt/sqlcanary/bin/sqlcanary"
CONTEXT_FILES = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md")
CONTEXT_DIRS = ("bot", "templates")


def ci_cache() -> Path:
    if env := os.environ.get("SQLCANARY_CI_CACHE"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sqlcanary-ci"


def build_context(root: Path) -> Path:
    """A copy of what `.ci/docker-setup` sends: the sources plus the wheelhouse (the build needs no PyPI)."""
    ctx = root / "ctx"
    ctx.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in CONTEXT_FILES:
        shutil.copy2(REPO / name, ctx / name)
    for name in CONTEXT_DIRS:
        shutil.copytree(REPO / name, ctx / name, ignore=ignore)
    wheels = ci_cache() / "wheelhouse"
    if not any(wheels.glob("*.whl")):
        sys.exit(f"no wheelhouse in {wheels}: run .ci/docker-setup first")
    shutil.copytree(wheels, ctx / ".wheelhouse")
    return ctx


def timed(
    cmd: list[str], *, ok: tuple[int, ...] = (0,), **kwargs: object
) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return elapsed, proc


def build(ctx: Path, tag: str, *, no_cache: bool) -> tuple[float, int]:
    """Seconds, and how many build steps actually ran (not served from the layer cache)."""
    cmd = ["docker", "build", "--network", "host", "-t", tag, *(["--no-cache"] if no_cache else []), str(ctx)]
    elapsed, proc = timed(cmd, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    steps = [line for line in proc.stdout.splitlines() if line.startswith("Step ")]
    from_steps = sum(1 for line in steps if " : FROM " in line)
    return elapsed, len(steps) - from_steps - proc.stdout.count("---> Using cache")


def container_run(image: str, cache: Path | None) -> float:
    mounts = ["-v", f"{REPO / 'benchmarks'}:/bench:ro"]
    if cache is not None:
        mounts += ["-v", f"{cache}:/var/cache/sqlcanary"]
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "host",
        *mounts,
        "--entrypoint",
        SQLCANARY,
        image,
        "run",
        "/bench/shop",
        "--out",
        "/tmp/run.json",
    ]
    return timed(cmd)[0]


def host_run(cache: Path | None, out: Path) -> float:
    env = dict(os.environ)
    if cache is not None:
        env["SQLCANARY_CACHE_DIR"] = str(cache)
    exe = shutil.which("sqlcanary") or sys.exit("sqlcanary is not installed on the host")
    return timed([exe, "run", str(REPO / "benchmarks" / "shop"), "--out", str(out)], env=env, cwd=REPO)[0]


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def pr_repo(root: Path) -> tuple[Path, Path]:
    """A repository holding the shop example: `main`, and `regress` checked out with `wrong_synonym` planted;
    and the pull_request event of regress into main."""
    repo = root / "repo"
    shutil.copytree(
        REPO / "benchmarks" / "shop",
        repo / "benchmarks" / "shop",
        ignore=shutil.ignore_patterns("__pycache__", "sqlcanary-results"),
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "shop")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "regress")
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/shop/regressions/apply.py"),
            "wrong_synonym",
            "--kb",
            str(repo / "benchmarks/shop/kb"),
        ],
        check=True,
        capture_output=True,
    )
    git(repo, "commit", "-qam", "plant wrong_synonym")
    head = git(repo, "rev-parse", "HEAD")
    side = {"full_name": "acme/agent", "default_branch": "main", "name": "agent", "owner": {"login": "acme"}}
    event = root / "event.json"
    event.write_text(
        json.dumps(
            {
                "number": 1,
                "repository": side,
                "pull_request": {
                    "number": 1,
                    "user": {"login": "alice"},
                    "head": {"ref": "regress", "sha": head, "repo": side},
                    "base": {"ref": "main", "sha": base, "repo": side},
                },
            }
        )
    )
    return repo, event


def container_check(image: str, repo: Path, event: Path) -> float:
    """The image's entry point on a pull_request event, as the runner starts it (workspace mounted, cwd there)."""
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_REPOSITORY": "acme/agent",
        "CI": "true",
        "INPUT_SUITE": "benchmarks/shop",
        "INPUT_COMMENT": "off",
        "INPUT_CHECK-RUN": "false",
        "INPUT_CACHE-DIR": ".sqlcanary/cache",
    }
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "host",
        "-v",
        f"{repo}:/github/workspace",
        "-v",
        f"{event}:/github/workflow/event.json:ro",
        "--workdir",
        "/github/workspace",
        *[a for k, v in env.items() for a in ("-e", f"{k}={v}")],
        image,
    ]
    return timed(cmd, ok=(1,))[0]  # exit 1: the planted regression fails the gate


def host_check(repo: Path, cache: Path) -> float:
    exe = shutil.which("sqlcanary") or sys.exit("sqlcanary is not installed on the host")
    env = {**os.environ, "SQLCANARY_CACHE_DIR": str(cache)}
    return timed(
        [exe, "check", "benchmarks/shop", "--base", "main", "--out", str(cache / "out"), "-q"],
        ok=(1,),
        env=env,
        cwd=repo,
    )[0]


def check_figures(tag: str, root: Path) -> None:
    repo, event = pr_repo(root)
    c_cold = container_check(tag, repo, event)
    c_warm = container_check(tag, repo, event)
    shutil.rmtree(repo / ".sqlcanary", ignore_errors=True)
    subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "-v",
            f"{repo}:/w",
            "--entrypoint",
            "rm",
            tag,
            "-rf",
            "/w/sqlcanary-results",
            "/w/.sqlcanary",
        ],
        capture_output=True,
        check=False,
    )
    h_cold = host_check(repo, root / "check-cache")
    h_warm = host_check(repo, root / "check-cache")
    print("the pull-request check (shop, wrong_synonym planted; wall time, container start included):")
    print(
        f"  container (the action), cold         {c_cold:6.1f} s   (aim <= 15 s; {c_cold / h_cold:.2f}x host cold)"
    )
    print(
        f"  container (the action), cache kept   {c_warm:6.1f} s   (aim <= 6 s; {c_warm / h_warm:.2f}x host warm)"
    )
    print(f"  host `sqlcanary check`, cold         {h_cold:6.1f} s")
    print(f"  host `sqlcanary check`, warm         {h_warm:6.1f} s")
    for pgdata in (root / "check-cache").glob("pg*"):
        stop_server(pgdata)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-cold-build", action="store_true", help="skip the --no-cache build (about 30 s)"
    )
    args = parser.parse_args()
    tag = "sqlcanary:bench"
    with tempfile.TemporaryDirectory(prefix="sqlcanary-image-bench-") as tmp:
        root = Path(tmp)
        ctx = build_context(root)
        if not args.skip_cold_build:
            cold, cold_steps = build(ctx, tag, no_cache=True)
        warm_nochange, _ = build(ctx, tag, no_cache=False)
        init = ctx / "bot" / "__init__.py"
        init.write_text(init.read_text() + f"\n# touched by action_image.py at {time.time()}\n")
        rebuild, rebuild_steps = build(ctx, tag, no_cache=False)
        size = int(timed(["docker", "image", "inspect", "-f", "{{.Size}}", tag])[1].stdout)

        print(f"image size                   {size / 1e6:7.0f} MB   (aim <= 400 MB; naive probe 584 MB)")
        if not args.skip_cold_build:
            print(f"cold build (--no-cache)      {cold:7.1f} s    {cold_steps} steps ran")
        print(f"rebuild, nothing changed     {warm_nochange:7.1f} s")
        print(f"rebuild, one bot/ file       {rebuild:7.1f} s    {rebuild_steps} steps ran", end="")
        print(f"   ({rebuild / cold:.2f}x the cold build)" if not args.skip_cold_build else "")

        cache = root / "cache"
        cache.mkdir()
        c_cold = container_run(tag, None)
        c_init = container_run(tag, cache)
        c_warm = container_run(tag, cache)
        h_cold = host_run(root / "host-cache", root / "host-cold.json")
        h_warm = host_run(root / "host-cache", root / "host-warm.json")
        print("sqlcanary run benchmarks/shop (wall time, container start included):")
        print(f"  container, image's data dir   {c_cold:6.1f} s   ({c_cold / h_cold:.2f}x host cold)")
        print(
            f"  container, empty cache mount  {c_init:6.1f} s   (initdb at start; {c_init / c_cold:.2f}x the line above)"
        )
        print(f"  container, warm cache mount   {c_warm:6.1f} s   ({c_warm / h_warm:.2f}x host warm)")
        print(f"  host, fresh cache dir         {h_cold:6.1f} s")
        print(f"  host, warm cache dir          {h_warm:6.1f} s")
        for pgdata in (root / "host-cache").glob("pg*"):
            stop_server(
                pgdata
            )  # the host run left its embedded server running (containers took theirs along)
        check_figures(tag, root)
        subprocess.run(["docker", "rmi", tag], capture_output=True, check=False)


def stop_server(pgdata: Path) -> None:
    """Fast shutdown of the server this script started, by the pid in its postmaster.pid."""
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.is_file():
        return
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    for _ in range(100):
        if not pid_file.exists():
            return
        time.sleep(0.1)


if __name__ == "__main__":
    main()
