"""Cause linking end to end: `sqlcanary check` of each planted shop regression (benchmarks/shop/regressions) in a
temporary git repository. The comment's first section names the KB file and the lines the regression edits and
lists exactly the cases it `breaks` under it. One repository and one cached base run serve every check."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.compare.comparison import Comparison
from tests.support.tinyrepo import git

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "benchmarks" / "shop"
REGRESSIONS = SHOP / "regressions"
SUITE = "benchmarks/shop"
NAMES = sorted(p.stem for p in REGRESSIONS.glob("*.yml"))

if shutil.which("git") is None:  # pragma: no cover - CI has git
    pytest.skip("git is not installed", allow_module_level=True)


def regression(name: str) -> dict:
    return yaml.safe_load((REGRESSIONS / f"{name}.yml").read_text())


@pytest.fixture(scope="module")
def shop_repo(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str):
    """main: the shop as shipped; one branch per regression with it planted and committed."""
    root = tmp_path_factory.mktemp("causes")
    repo = root / "repo"
    shutil.copytree(SHOP, repo / SUITE, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "shop")
    for name in NAMES:
        git(repo, "checkout", "-q", "-b", name, "main")
        subprocess.run(
            [sys.executable, str(REGRESSIONS / "apply.py"), name, "--kb", str(repo / SUITE / "kb")],
            check=True,
            capture_output=True,
        )
        git(repo, "commit", "-q", "-am", f"plant {name}")
    git(repo, "checkout", "-q", "main")
    patch = pytest.MonkeyPatch()
    patch.chdir(repo)
    patch.setenv("SQLCANARY_CACHE_DIR", str(root / "cache"))  # the base run is evaluated once, then reused
    patch.delenv("GITHUB_BASE_REF", raising=False)
    yield repo
    patch.undo()


def changed_lines(name: str) -> dict[str, str]:
    """{repository path: "line N" / "lines a–b"} of the lines each edited file has changed at the head, from
    the regression's own search/replace (independent of git and of bot.compare.causes)."""
    out: dict[str, list[str]] = {}
    for edit in regression(name)["edits"]:
        path = SHOP / edit["file"]
        old = path.read_text().splitlines()
        new = path.read_text().replace(edit["search"], edit["replace"]).splitlines()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            first, last, suffix = (j1 + 1, j2, "") if j2 > j1 else (i1 + 1, i2, " (removed)")
            out.setdefault(f"{SUITE}/{edit['file']}", []).append(
                (str(first) if first == last else f"{first}–{last}") + suffix
            )
    return {
        f: ("lines " if len(parts) > 1 or "–" in parts[0] else "line ") + ", ".join(parts)
        for f, parts in out.items()
    }


def first_section(comment: str) -> str:
    start = comment.index("\n### ")
    return comment[start : comment.index("\n#", start + 5)]


def cause_lines(section: str) -> dict[str, tuple[str, set[str]]]:
    """{file: (where, case ids)} of the bullets `- `file` where (changed here) → **N regressed**`, the ids on
    the bullet's line (`: ids`) or, when many, folded under its diff."""
    found = {}
    for item in re.split(r"^(?=- )", section, flags=re.M)[1:]:
        item = re.split(r"^(?=[^ \n])", item, flags=re.M)[1]  # the bullet and its indented lines
        m = re.match(r"^- `([^`]+)` (.+?) \(changed here\) → \*\*(\d+) regressed\*\*", item)
        if m:
            prose = re.sub(r"^  ```diff\n.*?^  ```\n", "", item[m.end() :], flags=re.M | re.S)
            ids = set(re.findall(r"`([^`]+)`", prose))
            assert len(ids) == int(m[3])
            found[m[1]] = (m[2], ids)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_each_planted_regression_is_traced_to_the_lines_it_edits(
    shop_repo: Path, pg_dsn: str, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "out"
    argv = ["check", SUITE, "--base", "main", "--head", name, "--dsn", pg_dsn, "--out", str(out), "-q"]
    assert main(argv) == 1
    comparison = Comparison.model_validate_json((out / "comparison.json").read_text())
    breaks = set(regression(name)["breaks"])
    assert {c.id for c in comparison.judged_as("regressed")} == breaks
    assert comparison.linked and comparison.unexplained == ()
    comment = (out / "comment.md").read_text()
    section = first_section(comment)
    assert section.startswith("\n### Why: the lines this change touched"), section[:200]
    assert comment.index("### Why") < comment.index("| Regressed |")
    causes = cause_lines(section)
    assert set(causes) == set(changed_lines(name)), section
    for file, where in changed_lines(name).items():
        assert causes[file][0] == where, (file, causes[file])
    # A regression that edits several files (stale_orders_table: GMV in one, order counts in the other) lists
    # under each the cases that used it: together, exactly the cases it breaks.
    assert set().union(*(ids for _, ids in causes.values())) == breaks
    assert "Not explained by this diff" not in section
    # every regressed case keeps its gold SQL; the comment shows the SQL of an example of each cause, which
    # says which changed lines explain it, and the HTML report names the cause of every case
    assert all(case.gold_sql for case in comparison.judged_as("regressed"))
    examples = [i for i in re.findall(r"<details><summary><code>([^<]+)</code>", comment) if i in breaks]
    assert examples
    for case_id in examples:
        block = comment[comment.index(f"<details><summary><code>{case_id}</code>") :]
        assert "**Cause:** `" + SUITE + "/kb/" in block[: block.index("</details>")]
    html = (out / "report.html").read_text()
    assert html.count('<div class="cause-ref">cause: ') >= len(breaks)


def test_a_change_outside_the_kb_is_not_explained(shop_repo: Path, pg_dsn: str, tmp_path: Path) -> None:
    """The reference agent itself changed (no KB line): the regressions are marked as not explained."""
    git(shop_repo, "checkout", "-q", "-b", "agent-change", "main")
    compose = shop_repo / SUITE / "shopagent" / "compose.py"
    text = compose.read_text()
    assert '"avg": "avg({e})"' in text
    compose.write_text(text.replace('"avg": "avg({e})"', '"avg": "sum({e})"'))
    git(shop_repo, "commit", "-q", "-am", "agent: sum instead of avg")
    git(shop_repo, "checkout", "-q", "main")
    out = tmp_path / "out"
    argv = [
        "check",
        SUITE,
        "--base",
        "main",
        "--head",
        "agent-change",
        "--dsn",
        pg_dsn,
        "--out",
        str(out),
        "-q",
        "--id",
        "shop-traffic-dau-*",
    ]
    assert main(argv) == 1
    comparison = Comparison.model_validate_json((out / "comparison.json").read_text())
    regressed = {c.id for c in comparison.judged_as("regressed")}
    assert regressed and comparison.causes == () and set(comparison.unexplained) == regressed
    assert comparison.changed_files == (f"{SUITE}/shopagent/compose.py",)
    section = first_section((out / "comment.md").read_text())
    assert "**Not explained by this diff**" in section
