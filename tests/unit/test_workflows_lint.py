"""Every workflow file (the project's `.github/workflows/` and the copyable `examples/workflows/`) and action.yml
pass `actionlint` and zizmor's security audits (`zizmor --offline`, configured by .github/zizmor.yml) with no
finding of medium or higher, as .ci/run checks too; and the workflow files hold to the rules zizmor leaves to
judgement: third-party actions pinned to a full commit SHA with the tag in a comment, `persist-credentials: false`
on every checkout, `permissions:` on every job, no `${{ }}` in a `run:`, only action.yml's inputs in `with:`, and
the example workflows agreeing with each other (names, artifacts, the sweep's matrix).

The two linters come with the test extras (pyproject). Without them their tests skip, naming what is missing,
unless CI is set: CI must run them.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.modes import MODES

REPO = Path(__file__).resolve().parents[2]
ZIZMOR_CONFIG = REPO / ".github" / "zizmor.yml"
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml")) + sorted(
    (REPO / "examples" / "workflows").glob("*.yml")
)
EXAMPLES = REPO / "examples" / "workflows"
ACTION = REPO / "action.yml"
# Findings silenced in a file with `# zizmor: ignore[...]`, each with its reason beside it in the file.
ALLOWED_IGNORES = {
    # The fork-safe poster: workflow_run is the trigger GitHub documents for it; the job checks out nothing and
    # the action validates the downloaded artifact as data.
    ("examples/workflows/sqlcanary-post.yml", "dangerous-triggers"),
}
# The action itself, by its release tag: .github/zizmor.yml allows it (no release commit exists to pin yet).
OWN_ACTION = "sqlcanary/sqlcanary@"
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
TAG_COMMENT = re.compile(r"#\s*v\d+(\.\d+)*\s*$")


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        reason = f"`{name}` is not installed (pip install -e '.[test]' installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI is set, so the workflow linters may not skip", pytrace=False)
        pytest.skip(reason)
    return found


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), _rel(path)
    return data


def _on(workflow: dict[str, Any]) -> Any:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true


def _steps(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job_id, step) for job_id, job in workflow["jobs"].items() for step in job.get("steps", [])]


def _own_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        step
        for _, step in _steps(workflow)
        if str(step.get("uses", "")).startswith(OWN_ACTION) or step.get("uses") == "./"
    ]


def _uses(workflow: dict[str, Any], prefix: str) -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, step in _steps(workflow) if str(step.get("uses", "")).startswith(prefix)]


def test_the_files_are_there() -> None:
    names = {p.name for p in WORKFLOWS}
    expected = {"ci.yml", "sqlcanary.yml"} | {
        f"sqlcanary-{kind}.yml" for kind in ("pr", "post", "baseline", "sweep", "private")
    }
    assert expected <= names, expected - names


def test_actionlint_finds_nothing() -> None:
    actionlint = _tool("actionlint")
    done = subprocess.run(
        [actionlint, "-format", "{{json .}}", *map(_rel, WORKFLOWS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        errors = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        pytest.fail(f"actionlint printed no JSON (exit {done.returncode}): {done.stdout}{done.stderr}")
    shown = [f"{e['filepath']}:{e['line']}: {e['message']} [{e['kind']}]" for e in errors]
    assert shown == [] and done.returncode == 0, "\n".join(shown) or done.stderr


def test_zizmor_finds_nothing_of_medium_or_higher() -> None:
    zizmor = _tool("zizmor")
    done = subprocess.run(
        [
            zizmor,
            "--offline",
            "--strict-collection",  # a file zizmor cannot read fails, never skips
            "--format",
            "json",
            "--config",
            _rel(ZIZMOR_CONFIG),
            *map(_rel, WORKFLOWS),
            "action.yml",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        findings = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"zizmor printed no JSON (exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    serious = [
        f"{f['ident']} ({f['determinations']['severity']}) in {_where(f)}: {f['desc']}"
        for f in findings
        if f["determinations"]["severity"] in ("Medium", "High")
    ]
    assert serious == [], "\n".join(serious)


def _where(finding: dict[str, Any]) -> str:
    for location in finding.get("locations", []):
        key = location["symbolic"]["key"]
        path = key.get("Local", {}).get("verbatim_path", "?")
        row = location.get("concrete", {}).get("location", {}).get("start_point", {}).get("row", -1)
        return f"{path}:{row + 1}"
    return "?"


def test_only_the_listed_zizmor_findings_are_silenced() -> None:
    found = {
        (_rel(path), ident.strip())
        for path in [*WORKFLOWS, ACTION]
        for idents in re.findall(r"zizmor:\s*ignore\[([^\]]*)\]", path.read_text())
        for ident in idents.split(",")
    }
    assert found == ALLOWED_IGNORES
    policies = yaml.safe_load(ZIZMOR_CONFIG.read_text())["rules"]["unpinned-uses"]["config"]["policies"]
    assert policies == {"sqlcanary/sqlcanary": "ref-pin", "*": "hash-pin"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_third_party_actions_are_pinned_to_a_commit_with_the_tag_beside_it(path: Path) -> None:
    lines = path.read_text().splitlines()
    for line in lines:
        match = re.match(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$", line)
        if not match or match.group(1).startswith("./"):
            continue
        ref, rest = match.groups()
        if ref.startswith(OWN_ACTION):
            assert "SHA" in rest, f"{_rel(path)}: say to pin the release commit: {line.strip()}"
            continue
        assert not ref.startswith("docker://"), f"{_rel(path)}: a docker image by tag: {line.strip()}"
        assert PINNED.match(ref), f"{_rel(path)}: not pinned to a full commit SHA: {line.strip()}"
        assert TAG_COMMENT.search(rest), f"{_rel(path)}: no `# vX.Y.Z` beside the SHA: {line.strip()}"


def test_each_action_is_pinned_to_one_commit_everywhere() -> None:
    pins: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for _, step in _steps(_load(path)):
            uses = str(step.get("uses", ""))
            if "@" in uses and not uses.startswith(OWN_ACTION):
                name, ref = uses.split("@", 1)
                pins.setdefault(name, set()).add(ref)
    assert pins and {name: refs for name, refs in pins.items() if len(refs) > 1} == {}


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_every_job_has_least_privilege_permissions_and_safe_steps(path: Path) -> None:
    workflow = _load(path)
    top = workflow.get("permissions")
    assert top in ({}, {"contents": "read"}), f"{_rel(path)}: workflow-level permissions {top!r}"
    pushers = set()
    for job_id, job in workflow["jobs"].items():
        assert "permissions" in job, f"{_rel(path)}: job `{job_id}` declares no permissions"
        writes = {scope for scope, level in (job["permissions"] or {}).items() if level == "write"}
        if path.parent == EXAMPLES:  # what users copy: at most what the comment, check run and repair need
            assert writes <= {"pull-requests", "checks", "contents"}, (
                f"{_rel(path)}: `{job_id}` writes {writes}"
            )
        if "contents" in writes:
            pushers.add(job_id)
    for job_id, step in _uses(workflow, "actions/checkout@"):
        persist = step.get("with", {}).get("persist-credentials")
        assert persist is False or job_id in pushers, f"{_rel(path)}: `{job_id}`'s checkout keeps the token"
    for job_id, step in _steps(workflow):
        assert "${{" not in str(step.get("run", "")), (
            f"{_rel(path)}: `{job_id}` expands an expression in run:"
        )


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_the_action_is_given_only_its_own_inputs(path: Path) -> None:
    inputs = set(_load(ACTION)["inputs"])
    for step in _own_steps(_load(path)):
        given = set(step.get("with", {}))
        assert given <= inputs, f"{_rel(path)}: not inputs of action.yml: {given - inputs}"
        mode = step.get("with", {}).get("mode")
        assert mode is None or mode in MODES, f"{_rel(path)}: mode {mode!r}"


def test_the_poster_posts_what_the_pull_request_check_uploads_and_never_checks_out() -> None:
    pr, post = _load(EXAMPLES / "sqlcanary-pr.yml"), _load(EXAMPLES / "sqlcanary-post.yml")
    assert _on(post)["workflow_run"] == {"workflows": [pr["name"]], "types": ["completed"]}
    [(_, upload)] = _uses(pr, "actions/upload-artifact@")
    assert upload["with"]["path"] == "sqlcanary-results/"
    [job] = post["jobs"].values()
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
    assert job["permissions"] == {"actions": "read", "pull-requests": "write", "checks": "write"}
    assert _uses(post, "actions/checkout@") == []  # the pull request's code never reaches this job
    [(_, download)] = _uses(post, "actions/download-artifact@")
    assert fnmatch.fnmatch(upload["with"]["name"], download["with"]["pattern"])
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["github-token"] == "${{ github.token }}"
    [action] = _own_steps(post)
    assert action["with"] == {"mode": "post", "artifacts": download["with"]["path"]}
    assert pr["jobs"]["check"]["permissions"]["contents"] == "read"


def test_the_sweep_plans_fans_out_and_reports() -> None:
    sweep = _load(EXAMPLES / "sqlcanary-sweep.yml")
    inputs = _on(sweep)["workflow_dispatch"]["inputs"]
    assert inputs["grid"]["type"] == "string" and inputs["shards"]["type"] == "number"
    assert len(inputs) <= 25  # GitHub's limit on workflow_dispatch inputs
    plan, legs, report = (sweep["jobs"][name] for name in ("plan", "sweep", "report"))
    [plan_step] = [s for s in plan["steps"] if s.get("id") == "plan"]
    assert plan_step["with"] == {
        "mode": "sweep-plan",
        "grid": "${{ inputs.grid }}",
        "shards": "${{ inputs.shards }}",
    }
    assert plan["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    assert legs["needs"] == "plan" and legs["strategy"]["fail-fast"] is False
    assert legs["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    [leg] = [s for s in legs["steps"] if str(s.get("uses", "")).startswith(OWN_ACTION)]
    assert leg["with"]["mode"] == "sweep"
    assert leg["with"]["setting"] == "${{ toJSON(matrix) }}" and leg["with"]["shard"] == "${{ matrix.shard }}"
    [(_, upload), *_] = _uses({"jobs": {"sweep": legs}}, "actions/upload-artifact@")
    assert upload["with"] == {"name": "sweep-${{ matrix.leg }}", "path": "sqlcanary-results/"}
    assert report["needs"] == "sweep" and report["if"] == "always()"
    [(_, download)] = _uses({"jobs": {"report": report}}, "actions/download-artifact@")
    assert fnmatch.fnmatch("sweep-3", download["with"]["pattern"]) and download["with"]["path"] == "runs"
    [step] = _own_steps({"jobs": {"report": report}})
    assert step["with"] == {"mode": "sweep-report", "artifacts": "runs"}


def test_the_private_variant_repairs_with_a_secret_key() -> None:
    private = _load(EXAMPLES / "sqlcanary-private.yml")
    [job] = private["jobs"].values()
    assert job["permissions"] == {"contents": "write", "pull-requests": "write", "checks": "write"}
    [step] = _own_steps(private)
    assert step["with"]["repair"] is True
    assert step["with"]["openai-api-key"] == "${{ secrets.OPENAI_API_KEY }}"


def test_the_baseline_runs_on_push_and_saves_the_cache_pull_requests_restore() -> None:
    baseline, pr = _load(EXAMPLES / "sqlcanary-baseline.yml"), _load(EXAMPLES / "sqlcanary-pr.yml")
    assert _on(baseline) == {"push": {"branches": ["main"]}}
    [(_, saved)], [(_, restored)] = _uses(baseline, "actions/cache@"), _uses(pr, "actions/cache@")
    assert saved["with"]["path"] == restored["with"]["path"] == ".sqlcanary/cache"
    assert saved["with"]["key"].startswith(restored["with"]["restore-keys"])
    [step] = _own_steps(baseline)
    assert step["with"]["mode"] == "baseline"


def test_the_sample_grid_is_a_valid_grid() -> None:
    grid = pytest.importorskip("bot.sweep.grid")
    settings = grid.load_grid(REPO / "examples" / "sweeps" / "grid.yml")
    assert len(settings) >= 2 and len({s.name for s in settings}) == len(settings)


def _readme_workflows(tmp_path: Path) -> list[Path]:
    """The complete workflows the README's "Use on GitHub" shows (minimal setup, sharded check), as files."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Use on GitHub\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S) if "\njobs:" in b]
    assert len(blocks) >= 2, "the README shows the minimal setup and the sharded check"
    paths = []
    for index, body in enumerate(blocks):
        path = tmp_path / f"readme-{index}.yml"
        path.write_text(body)
        paths.append(path)
    return paths


def test_the_readme_workflows_pass_both_linters_and_give_only_action_inputs(tmp_path: Path) -> None:
    paths = _readme_workflows(tmp_path)
    inputs = set(_load(ACTION)["inputs"])
    for path in paths:
        for step in _own_steps(_load(path)):
            assert set(step.get("with", {})) <= inputs, path.read_text()
    actionlint, zizmor = _tool("actionlint"), _tool("zizmor")
    linted = subprocess.run(
        [actionlint, *map(str, paths)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr
    audited = subprocess.run(
        [zizmor, "--offline", "--config", str(ZIZMOR_CONFIG), "--min-severity", "medium", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert audited.returncode == 0, audited.stdout + audited.stderr[-2000:]
