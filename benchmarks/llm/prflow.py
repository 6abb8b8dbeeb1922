"""The repair pull request of one planted regression, made the way the Action makes it: `run_check` with hunk
attribution, then `repair_step` (bot.modes.repair) against the fake GitHub of tests/support, whose git data
operations write a real bare repository. Then the reference agent judges the repair branch on the whole suite.

    run_flow(base, "cpc_wrong_denominator", work, llm=None)    # revert only: no model
    run_flow(base, name, work, llm=LLMEndpoint(url, model))     # the LLM edit first, as the Action prefers

`run_flow` plants the regression on a branch `planted` of a clone of `base` (bench's shop repository), pushes
`main` and `planted` to a bare remote and checks `planted` out as actions/checkout does; the flow itself runs in
a child process (`python -m benchmarks.llm.prflow`, its working directory the checkout, as the Action's) so
that `--snapshot`'s product is what runs and the child's `chdir` stays its own. The child writes one JSON file:
repair PR opened (and how: opened, updated, closed...), the files it changes, the pass rates its body states
(base, head, repaired), fixed-by (llm_edit, revert, none), the cases it repaired and the regression's cases.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):  # `python benchmarks/llm/prflow.py`
    sys.path.insert(0, str(REPO))

from benchmarks.llm.workspace import KEY_ENV, clone, git, plant, statuses  # noqa: E402

FULL_NAME = "acme/shop"
BRANCH = "sqlcanary/repair/pr-1"
PR_HEAD = "planted"
# A pull request seldom changes one line only: each planted one also adds this note to the KB's README (no answer
# reads it). Without a second change, reverting the breaking one reverts the whole pull request, which the
# Action never offers as a repair (bot.attribution.revert): no revert could show.
BYSTANDER = ("kb/README.md", "\nReviewed for the Q1 2026 planning cycle.\n")


@dataclass(frozen=True)
class LLMEndpoint:
    base_url: str
    model: str


def _world(base: Path, name: str, work: Path, *, bystander: bool) -> tuple[Path, Path, str, str]:
    """(checkout of `planted`, bare remote, base sha, head sha): the regression planted and committed, with the
    bystander change when asked."""
    src = clone(base, work / f"{name}-src")
    plant(src, name)
    if bystander:
        with (src / BYSTANDER[0]).open("a", encoding="utf-8") as f:
            f.write(BYSTANDER[1])
    git(src, "checkout", "--quiet", "-b", PR_HEAD)
    git(src, "commit", "--quiet", "-am", f"plant {name}")
    bare = work / f"{name}-remote.git"
    git(work, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    git(src, "push", "--quiet", str(bare), "main", PR_HEAD)
    checkout = clone(bare, work / f"{name}-checkout")
    git(checkout, "checkout", "--quiet", PR_HEAD)
    return checkout, bare, git(src, "rev-parse", "main").strip(), git(src, "rev-parse", PR_HEAD).strip()


def run_flow(
    base: Path,
    name: str,
    work: Path,
    *,
    llm: LLMEndpoint | None,
    max_llm_calls: int = 12,
    attribute_calls: int = 100,
    pythonpath: Path | None = None,
    cache_dir: Path | None = None,
    bystander: bool = True,
    timeout: float = 7200,
) -> dict[str, Any]:
    """The repair PR of regression `name` and its judgement: a dict (see `_gather` and `judge`)."""
    start = time.monotonic()
    checkout, bare, base_sha, head_sha = _world(base, name, work, bystander=bystander)
    out = work / f"{name}-prflow.json"
    args = [
        "--workspace",
        str(checkout),
        "--bare",
        str(bare),
        "--base-sha",
        base_sha,
        "--head-sha",
        head_sha,
        "--out",
        str(out),
        "--max-llm-calls",
        str(max_llm_calls if llm else 0),
        "--attribute-calls",
        str(attribute_calls),
        "--cache-dir",
        str(cache_dir or work / "action-cache"),
    ]
    if llm:
        args += ["--llm-base-url", llm.base_url, "--model", llm.model]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SQLCANARY_LLM_", "INPUT_", "GITHUB_"))}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(pythonpath or ""), str(REPO), os.environ.get("PYTHONPATH")])
    )
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.llm.prflow", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    result.update(name=name, exit=done.returncode, log=(done.stdout + done.stderr)[-4000:])
    if not out.is_file():
        result["error"] = f"the repair flow exited {done.returncode} without {out.name}"
    result["judge"] = (
        judge(bare, work / f"{name}-judge", pythonpath=pythonpath) if result.get("opened") else {}
    )
    result["seconds"] = round(time.monotonic() - start, 1)
    return result


def judge(bare: Path, dest: Path, *, pythonpath: Path | None = None) -> dict[str, str]:
    """The reference agent's statuses on the whole suite at the repair branch's tip."""
    repo = clone(bare, dest)
    git(repo, "checkout", "--quiet", BRANCH)
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    run = dest.parent / f"{dest.name}.json"
    subprocess.run(
        [sys.executable, "-m", "bot", "run", "--out", str(run), "-q", "--no-answer-cache"],
        cwd=repo,
        env=env,
        capture_output=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return statuses(run) if run.is_file() else {}


# ---- the child: the Action's check and repair step -------------------------------------------------------------
def _event(path: Path, base_sha: str, head_sha: str) -> Path:
    repo = {"full_name": FULL_NAME, "default_branch": "main", "name": "shop", "owner": {"login": "acme"}}
    payload = {
        "action": "synchronize",
        "number": 1,
        "pull_request": {
            "number": 1,
            "user": {"login": "alice"},
            "head": {"ref": PR_HEAD, "sha": head_sha, "repo": repo},
            "base": {"ref": "main", "sha": base_sha, "repo": repo},
        },
        "repository": repo,
        "sender": {"login": "alice"},
    }
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def _gather(fake: Any, bare: Path, check: Any, step: Any) -> dict[str, Any]:
    from bot.report.repair_pr import parse_repair_data
    from tests.support.fake_github_git import git as bare_git

    pulls = [p for p in fake.state.repo(FULL_NAME).pulls.values() if p["head"]["ref"] == BRANCH]
    pr = pulls[-1] if pulls else None
    data = parse_repair_data(pr["body"]) if pr else None
    files: list[str] = []
    if pr is not None and pr["state"] == "open":
        files = bare_git(bare, "diff", "--name-only", f"{PR_HEAD}...{BRANCH}").split()
    comparison = check.comparison
    rates = (data or {}).get("pass_rates") or {}
    revert = check.found.revert if check.found else None
    return {
        "check_exit": check.exit_code,
        "verdict": comparison.verdict,
        "regressed": sorted(c.id for c in comparison.judged_as("regressed")),
        "fixed_at_head": sorted(c.id for c in comparison.judged_as("fixed")),
        "action": step.result.action if step.result else None,
        "opened": bool(pr and pr["state"] == "open"),
        "draft": bool(pr and pr.get("draft")),
        "files": files,
        "fixed_by": (data or {}).get("fixed_by", "none"),
        "pass_rates": {
            "base": rates.get("base", comparison.overall.base_rate),
            "head": rates.get("head", comparison.overall.head_rate),
            "repaired": rates.get("repaired"),
        },
        "repaired": list(step.repaired),
        "still_failing": list(step.still_failing),
        "llm": (data or {}).get("llm") or {},
        "note": step.note,
        "revert": {"holds": revert.holds, "reason": revert.reason} if revert else None,
        "requests": len(fake.writes()),
    }


def child(args: argparse.Namespace) -> int:
    from bot.base.git import repo_root
    from bot.base.settings import Settings
    from bot.check.pipeline import run_check
    from bot.check.request import CheckRequest
    from bot.github.context import ActionContext
    from bot.github.event import load_event
    from bot.github.inputs import RunnerContext, read_inputs
    from bot.modes.repair import repair_step
    from bot.modes.setup import action_settings
    from bot.run.request import RunRequest
    from tests.support.fake_github import FakeGitHub
    from tests.support.fake_github_git import attach_git
    from tests.support.github_fixtures import ACTIONS_TOKEN, TOKENS, client

    workspace, tmp = Path(args.workspace).resolve(), Path(args.out).resolve().parent
    event_path = _event(tmp / f"{Path(args.out).stem}-event.json", args.base_sha, args.head_sha)
    inputs = {
        "github-token": ACTIONS_TOKEN,
        "config": "sqlcanary.yml",
        "repair": "true",
        "repair-max-llm-calls": str(args.max_llm_calls),
        "repair-max-agent-calls": str(args.attribute_calls),
        "cache-dir": args.cache_dir,
    }
    if args.llm_base_url:
        inputs.update(
            {"openai-base-url": args.llm_base_url, "model": args.model, "openai-api-key": "sk-dummy"}
        )
    with FakeGitHub(tokens=dict(TOKENS)) as fake:
        attach_git(fake.state, FULL_NAME, Path(args.bare))
        fake.state.add_pull(
            fake.base_url, FULL_NAME, head=PR_HEAD, head_sha=args.head_sha, base_sha=args.base_sha
        )
        env = {
            **os.environ,
            KEY_ENV: "sk-dummy",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_API_URL": fake.base_url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_REPOSITORY": FULL_NAME,
            "GITHUB_SHA": args.head_sha,
            "GITHUB_RUN_ID": "1",
            "GITHUB_JOB": "eval",
            "GITHUB_WORKFLOW": "sqlcanary",
            **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
        }
        runner = RunnerContext.from_environ(env)
        event = load_event(runner.event_name, runner.event_path, sha=runner.sha)
        ctx = ActionContext(inputs=read_inputs(env), runner=runner, event=event, mode="check")
        settings = action_settings(Settings.from_environ(env), ctx, workspace)
        out_dir = workspace / "sqlcanary-results"
        req = CheckRequest(
            run=RunRequest(config="sqlcanary.yml", quiet=True, cwd=str(workspace)),  # as the Action
            base=args.base_sha,
            out_dir=str(out_dir),
            trust_head_config=False,
            attribute_calls=args.attribute_calls,
            write_comment=False,
        )
        say = lambda text: print(f"sqlcanary: {text}", flush=True)  # noqa: E731
        check = run_check(req, settings, say=say)
        step = repair_step(
            ctx,
            settings,
            check,
            make_github=lambda token: client(fake, token),
            workdir=workspace,
            repo=repo_root(workspace) or workspace,
            say=say,
            out_dir=out_dir,
        )
        result = _gather(fake, Path(args.bare), check, step)
        record = out_dir / "repair" / "outcome.json"  # the loop's own count, also when no PR was opened
        if record.is_file():
            result["llm"] = json.loads(record.read_text(encoding="utf-8")).get("llm") or result["llm"]
    Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="one repair pull request, made as the Action makes it (internal)")
    p.add_argument("--workspace", required=True)
    p.add_argument("--bare", required=True)
    p.add_argument("--base-sha", required=True)
    p.add_argument("--head-sha", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--max-llm-calls", type=int, default=0)
    p.add_argument("--attribute-calls", type=int, default=100)
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--llm-base-url", default="")
    p.add_argument("--model", default="")
    return child(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
