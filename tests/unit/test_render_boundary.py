"""What a pull request can do to what sqlcanary renders (README, "Security model"): nothing to the templates (they
come from the installed package and render in Jinja's sandbox), and no bidi or zero-width control character of
its text reaches a reader unescaped: not in the comment, the job summary, the HTML report or the check run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from jinja2 import FileSystemLoader
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from bot.base import templating
from bot.base.results import RunResult
from bot.base.textfilters import clean, md_code, md_escape, md_fence, show_invisible
from bot.compare.comparison import Comparison
from bot.github.checks import Annotation, publish_check_run
from bot.github.workflow import append_summary
from bot.report.environment import environment as report_environment
from bot.report.render import render

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
REPO = Path(__file__).resolve().parents[2]
INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f"
INVISIBLE += "\u2028\u2029\ufeff\u061c\u180e"
PLAIN = "é 中文 🎉 👩\u200d💻"  # an emoji's own zero-width joiner is no control


# ---- A: templates are code ------------------------------------------------------------------------------------


def test_templates_come_from_the_package_beside_this_bot_never_from_the_current_folder(
    tmp_path: Path, monkeypatch
) -> None:
    planted = tmp_path / "templates"
    planted.mkdir()
    (planted / "comment.md.j2").write_text("PWNED {{ view }}\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "sqlcanary"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    env = templating.new_environment()
    assert isinstance(env.loader, FileSystemLoader)
    assert [Path(p) for p in env.loader.searchpath] == [templating.templates_dir()]
    assert templating.templates_dir() == REPO / "templates"  # this checkout's (tests run from the source)
    source, filename, _ = env.loader.get_source(env, "comment.md.j2")
    assert Path(filename).parent == REPO / "templates" and "PWNED" not in source


def test_a_folder_named_templates_beside_bot_counts_only_in_a_sqlcanary_checkout(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    assert not templating._is_source_tree(tmp_path)  # e.g. site-packages/templates of some other package
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n', encoding="utf-8")
    assert not templating._is_source_tree(tmp_path)
    assert templating._is_source_tree(REPO)


def test_every_environment_is_the_immutable_sandbox_with_the_same_escaping() -> None:
    for env in (templating.environment(), report_environment()):
        assert isinstance(env, ImmutableSandboxedEnvironment)
        assert env.finalize is clean
        assert env.autoescape("report.html.j2") and env.autoescape("junit.xml.j2")
        assert not env.autoescape("comment.md.j2") and not env.autoescape(None)
    env = templating.new_environment()
    with pytest.raises(SecurityError):
        env.from_string("{{ ''.__class__.__mro__ }}").render()
    with pytest.raises(SecurityError):
        env.from_string("{% set xs = [] %}{{ xs.append(1) }}").render()


# ---- B: bidi and zero-width controls are shown ----------------------------------------------------------------


def test_each_control_is_shown_as_its_code_point_and_plain_text_is_untouched() -> None:
    shown = show_invisible(f"a{INVISIBLE}b")
    assert not set(INVISIBLE) & set(shown.replace("\u200d", "")) and "\u200d" not in shown
    assert re.fullmatch(r"a(<U\+[0-9A-F]{4}>){19}b", shown)
    assert show_invisible("id\u202eexe") == "id<U+202E>exe"
    assert show_invisible(PLAIN) == PLAIN == clean(PLAIN)
    assert md_escape(PLAIN) == PLAIN and md_code(PLAIN) == f"`{PLAIN}`"
    # sqlcanary's own zero-width space, after `@` or `#`, is how mentions are defused: kept
    assert md_escape("@octocat #12") == "@\u200boctocat #\u200b12"
    assert md_fence("SELECT 1 /*\u2066*/") == "```\nSELECT 1 /*<U+2066>*/\n```"


def _hostile(text: str) -> str:
    """The golden fixture with bidi and zero-width controls in a case id, a question and the SQL."""
    return (
        text.replace("hostile-```-case", "hostile-\u202e-case\u200b")
        .replace("Ignore this", "Ignore\u2066 this\u200b")
        .replace("SELECT", "SEL\u202eECT")
    )


@pytest.fixture
def hostile() -> tuple[Comparison, RunResult, RunResult]:
    comparison = Comparison.model_validate_json(_hostile((GOLDEN / "comparison.json").read_text("utf-8")))
    runs = []
    for name in ("head_run.json", "base_run.json"):
        path = GOLDEN / name
        runs.append(RunResult.model_validate_json(_hostile(path.read_text("utf-8"))))
    return comparison, runs[0], runs[1]


def _no_raw(text: str) -> None:
    raw = {c for c in INVISIBLE if c in text}
    defused = re.sub("[@#]\u200b", "", text)  # sqlcanary's own, after @ and #
    assert not {c for c in raw if c in defused}, [f"U+{ord(c):04X}" for c in raw]


@pytest.mark.parametrize("fmt", ["md", "summary", "html", "junit"])
def test_every_report_shows_the_controls_of_a_pull_requests_text_escaped(fmt: str, hostile) -> None:
    comparison, head, base = hostile
    text = render(fmt, comparison, head=head, base=base)
    _no_raw(text)
    mark = "&lt;U+202E&gt;" if fmt in ("html", "junit") else "<U+202E>"
    assert f"hostile-{mark}-case" in text.replace("\\", "") or f"hostile-{mark}" in text
    assert "U+200B" in text and ("U+2066" in text or fmt == "junit")  # JUnit shows no question


def test_the_reports_keep_plain_non_ascii_text_as_it_is(hostile) -> None:
    comparison, head, base = hostile
    data = comparison.model_dump_json().replace("Ignore", PLAIN.replace("\u200d", "\\u200d"))
    plain = Comparison.model_validate_json(data)
    for fmt in ("md", "html"):
        assert PLAIN in render(fmt, plain, head=head, base=base)


class _FakeRun:
    id = 7
    html_url = "https://github.example/run/7"

    def __init__(self) -> None:
        self.edits: list[dict[str, Any]] = []

    def edit(self, **kw: Any) -> None:
        self.edits.append(kw)


class _FakeRepo:
    def __init__(self) -> None:
        self.created: dict[str, Any] = {}

    def create_check_run(self, name: str, head_sha: str, **kw: Any) -> _FakeRun:
        self.created = {"name": name, **kw}
        return _FakeRun()


def test_the_check_run_shows_the_controls_escaped_in_title_summary_and_annotations() -> None:
    repo = _FakeRepo()
    note = Annotation(
        path="cases/a.yml",
        start_line=3,
        end_line=3,
        level="failure",
        title="regressed: case\u202e1",
        message=f"Why\u200b?\u2066 {PLAIN}",
    )
    publish_check_run(
        repo,  # type: ignore[arg-type]
        name="sqlcanary",
        head_sha="a" * 40,
        conclusion="failure",
        title="gate failed: hostile\u202e",
        summary="| `id\u2067` | ok |",
        annotations=[note],
        repo_paths=["cases/a.yml"],
    )
    output = repo.created["output"]
    assert output["title"] == "gate failed: hostile<U+202E>"
    assert output["summary"] == "| `id<U+2067>` | ok |"
    [sent] = output["annotations"]
    assert sent["title"] == "regressed: case<U+202E>1"
    assert sent["message"] == f"Why<U+200B>?<U+2066> {PLAIN}"


def test_the_job_summary_shows_the_controls_escaped(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    append_summary(path, f"case `x\u202e` {PLAIN}\n")
    assert path.read_text(encoding="utf-8") == f"case `x<U+202E>` {PLAIN}\n"
