"""The shop example in a temporary git repository, pointed at a local LLM, and the steps the benchmark and the
`llm` test share: plant a regression, `sqlcanary check` it, `sqlcanary repair --from-check`, and judge the result
with the reference agent.

sqlcanary runs as a subprocess (`python -m bot`), as a user runs it: what is measured is the command line,
config and exit codes included. The LLM is reached through sqlcanary.yml's `llm:` section plus
SQLCANARY_LLM_BASE_URL / SQLCANARY_LLM_MODEL and a dummy key (a local server wants none).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
KEY_ENV = "SQLCANARY_BENCH_LLM_KEY"
# A slow local server: one cold shop prompt takes minutes on 2 cores; retries only queue behind it.
LLM_SETTINGS: dict[str, Any] = {"api_key_env": KEY_ENV, "timeout_s": 900, "max_retries": 1, "cache": False}
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
}  # same tree, same sha: the base run cache hits


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
        stdin=subprocess.DEVNULL,
    )
    return done.stdout


def make_shop_repo(dest: Path, *, llm: dict[str, Any] | None = None) -> Path:
    """benchmarks/shop copied to `dest` as one commit on `main`, its sqlcanary.yml given an `llm:` section."""
    shutil.copytree(SHOP, dest, ignore=shutil.ignore_patterns("__pycache__", "sqlcanary-results", "*.pyc"))
    cfg_path = dest / "sqlcanary.yml"
    cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8"))
    cfg["llm"] = {**LLM_SETTINGS, **(llm or {})}
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    (dest / ".gitignore").write_text("__pycache__/\n*.pyc\nsqlcanary-results/\n", encoding="utf-8")
    git(dest, "init", "--quiet", "--initial-branch=main")
    git(dest, "add", "-A")
    git(dest, "commit", "--quiet", "-m", "shop")
    return dest


def clone(base: Path, dest: Path) -> Path:
    subprocess.run(
        ["git", "clone", "--quiet", str(base), str(dest)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    return dest


@dataclass
class Sqlcanary:
    """Runs `python -m bot` with the LLM environment; `pythonpath` puts a snapshot of the product first."""

    base_url: str
    model: str
    pythonpath: Path | None = None
    log: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "SQLCANARY_LLM_BASE_URL": self.base_url,
            "SQLCANARY_LLM_MODEL": self.model,
            KEY_ENV: "sk-local-dummy",
            "PYTHONUNBUFFERED": "1",
        }
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.pythonpath), env.get("PYTHONPATH")]))
        return env

    def __call__(self, cwd: Path, *args: str, timeout: float = 7200) -> tuple[int, str, float]:
        """(exit code, stdout+stderr, seconds)."""
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "bot", *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        out = done.stdout + done.stderr
        self.log.append(f"$ sqlcanary {' '.join(args)}  (in {cwd}, exit {done.returncode})\n{out}")
        return done.returncode, out, time.monotonic() - start


def regression_names() -> list[str]:
    return sorted(p.stem for p in (SHOP / "regressions").glob("*.yml"))


def regression_manifest(name: str) -> dict[str, Any]:
    data = yaml.safe_load((SHOP / "regressions" / f"{name}.yml").read_text(encoding="utf-8"))
    return {**data, "fixes": list(data.get("fixes") or [])}


def regression_breaks(name: str) -> list[str]:
    return list(regression_manifest(name)["breaks"])


def known_failing() -> set[str]:
    """Cases that fail on the shipped KB: those a planted mixed change fixes (its manifest's `fixes`)."""
    return {i for name in regression_names() for i in regression_manifest(name)["fixes"]}


def plant(repo: Path, name: str) -> None:
    """Apply a planted regression to the working tree (uncommitted: `check` reviews the working tree)."""
    subprocess.run(
        [sys.executable, str(repo / "regressions" / "apply.py"), name, "--kb", str(repo / "kb")],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )


def statuses(run_json: Path) -> dict[str, str]:
    data = json.loads(run_json.read_text(encoding="utf-8"))
    return {c["id"]: c["status"] for c in data["cases"]}


@dataclass
class RepairResult:
    name: str
    breaks: list[str]
    check_exit: int
    failing_before: list[str]
    repair_exit: int | None = None
    seconds: float = 0.0
    outcome: dict[str, Any] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)  # the reference agent's statuses after the repair
    changed: list[str] = field(default_factory=list)  # files the repair changed in the repository
    error: str = ""

    fixes: list[str] = field(default_factory=list)  # cases the planted change fixes (a mixed change)

    @property
    def fixed(self) -> bool:
        return bool(self.after) and all(self.after.get(i) == "passed" for i in self.breaks)

    @property
    def kept(self) -> bool:
        """The planted change's own fixes still pass (trivially true when it fixes nothing)."""
        return bool(self.after) and all(self.after.get(i) == "passed" for i in self.fixes)

    @property
    def green(self) -> bool:
        """Every case passes, but those that fail on the shipped KB and that this change does not fix."""
        skip = known_failing() - set(self.fixes)
        return bool(self.after) and all(s == "passed" for i, s in self.after.items() if i not in skip)

    @property
    def only_kb(self) -> bool:
        return all(p.startswith("kb/") for p in self.changed)

    @property
    def llm(self) -> dict[str, Any]:
        return dict(self.outcome.get("llm") or {})

    def attempts(self) -> list[dict[str, Any]]:
        out = [a for c in self.outcome.get("cases", []) for a in c.get("attempts", [])]
        return out + list(self.outcome.get("critique", []))


def repair_regression(
    base: Path, name: str, work: Path, sqlcanary: Sqlcanary, *, max_llm_calls: int = 12, max_critique: int = 1
) -> RepairResult:
    """Plant `name` in a clone of `base`, check it against main, repair from the check, and re-run the whole
    suite with the reference agent to judge: fixed (every case it broke passes), green (every case passes),
    only KB files changed."""
    repo = clone(base, work / name)
    plant(repo, name)
    # Committed on a branch, so that `git status` afterwards shows what the repair changed and nothing else.
    git(repo, "checkout", "--quiet", "-b", "planted")
    git(repo, "commit", "--quiet", "-am", f"plant {name}")
    check_dir, repair_dir = work / f"{name}-check", work / f"{name}-repair"
    code, _, _ = sqlcanary(repo, "check", "--base", "main", "--out", str(check_dir), "-q")
    manifest = regression_manifest(name)
    result = RepairResult(
        name=name, breaks=manifest["breaks"], fixes=manifest["fixes"], check_exit=code, failing_before=[]
    )
    if not (check_dir / "head.json").is_file():
        result.error = f"check exited {code} without head.json"
        return result
    known = known_failing()  # failing on the shipped KB, so failing at the base too: not this regression's
    head = statuses(check_dir / "head.json")
    result.failing_before = sorted(i for i, s in head.items() if s != "passed" and i not in known)
    code, out, secs = sqlcanary(
        repo,
        "repair",
        "--from-check",
        str(check_dir),
        "--out",
        str(repair_dir),
        "--max-llm-calls",
        str(max_llm_calls),
        "--max-critique",
        str(max_critique),
    )
    result.repair_exit, result.seconds = code, secs
    if (repair_dir / "outcome.json").is_file():
        result.outcome = json.loads((repair_dir / "outcome.json").read_text(encoding="utf-8"))
    else:
        result.error = f"repair exited {code} without outcome.json: {out[-1500:]}"
    result.changed = [
        line[3:] for line in git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    ]
    after = work / f"{name}-after.json"
    sqlcanary(repo, "run", "--out", str(after), "-q", "--no-answer-cache")
    if after.is_file():
        result.after = statuses(after)
    return result
