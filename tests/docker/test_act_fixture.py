"""A pull request's fixture in the built image, through act (issue 23): the head's `shop.sql` tries a psql shell
(`\\!`) and, in a second pull request, `COPY ... TO PROGRAM`. Before, the first was a root shell in the action's
container and the second a shell as the server's user. Now the fixture is read as SQL and run as the restricted
role: each job fails with the fixture's file and line named, and neither program ran (each writes a file into
the workspace that a later step looks for). Driven like tests/docker/test_act.py: a depth-1 clone of the head,
the fake GitHub, the git server for the base commit, act building the image offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.github_fixtures import REPO
from tests.support.tinyrepo import CONFIG, FIXTURE, git, make_tiny_repo

from .test_act import WORKFLOW, WORKFLOW_NAME, ActRun, _copy_action, served

pytestmark = pytest.mark.docker

MARKER = "/github/workspace/pwned"
ATTACKS = {
    "psql-shell": f"\\! touch {MARKER}-shell",
    "copy-to-program": f"COPY customers TO PROGRAM 'touch {MARKER}-program; chmod 666 {MARKER}-program';",
}
LOOK = """\
      - name: look for what the fixture ran
        if: always()
        run: ls /github/workspace/pwned-* 2>/dev/null && echo "FIXTURE RAN A PROGRAM" || echo "no program ran"
"""


def _repository(root: Path, line: str) -> tuple[Path, str, str]:
    src = root / "src"
    src.mkdir()
    _copy_action(src)
    (src / ".github" / "workflows").mkdir(parents=True)
    workflow = WORKFLOW.format(name=WORKFLOW_NAME, config=CONFIG) + LOOK
    (src / ".github" / "workflows" / "pr.yml").write_text(workflow)
    make_tiny_repo(src)
    base_sha = git(src, "rev-parse", "HEAD")
    (src / "evals/suite/shop.sql").write_text(FIXTURE + line + "\n")
    git(src, "commit", "-qam", "the fixture, changed")
    head_sha = git(src, "rev-parse", "HEAD")
    bare = root / "served" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(root, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(src, "push", "-q", str(bare), f"{base_sha}:refs/heads/main", f"{head_sha}:refs/heads/regress")
    return bare, base_sha, head_sha


@pytest.fixture(scope="module", params=sorted(ATTACKS))
def attacked(request, tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path, act_binary: str) -> ActRun:
    root = tmp_path_factory.mktemp(f"act-fixture-{request.param}")
    bare, base_sha, head_sha = _repository(root, ATTACKS[request.param])
    with served(root, bare, base_sha, head_sha, wheelhouse=wheelhouse, act_binary=act_binary) as act:
        run = act.run()
        check_runs = list(act.fake.state.repo(REPO).check_runs.values())
    assert all(r.get("conclusion") not in ("success", "neutral") for r in check_runs)
    return run


def test_the_fixture_runs_no_program_and_the_job_names_its_line(attacked: ActRun) -> None:
    assert attacked.code != 0
    assert attacked.said(r"evals/suite/shop\.sql:3: fixture"), attacked.text[-4000:]
    assert attacked.said(r"is a psql meta-command|permission denied to COPY to or from an external program")
    assert attacked.said("no program ran") and not attacked.said("FIXTURE RAN A PROGRAM")
