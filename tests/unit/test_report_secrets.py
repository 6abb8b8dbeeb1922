"""Secrets never reach a report, whichever way they came in (an agent's stderr and error text, a saved run from
before masking), in any format; and the sticky comment's marker as a parameter that bot/github agrees with."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from bot.agents import AgentContext, make_agent
from bot.base.results import CaseResult, Prediction, RunMeta, RunResult, summarize
from bot.base.secrets import redact_model, scrub_rendered
from bot.cases.model import Case
from bot.compare.comparison import compare_runs
from bot.github.comment import hidden_marker
from bot.report.marker import MARKER, MAX_KEY_CHARS, comment_marker, marker_for, marker_key, valid_marker_key
from bot.report.render import FORMATS, render, render_comment
from bot.run.case_results import case_result

PY = sys.executable
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # an underscore: Markdown escapes it as `ghp\_`
MARKUP = "pw&<sec>'ret\"_x"  # every character the HTML, XML and Markdown escapers touch
LEAKY = """
import json, sys
request = json.loads(sys.stdin.read())
leak = request["options"]["leak"]
print(f"Traceback: auth failed for {leak}", file=sys.stderr)
print(json.dumps({"error": f"the API refused token {leak}"}))
"""


def _case(cid: str) -> Case:
    return Case(id=cid, question=f"what is {cid}?", gold_sql=("SELECT 1",), db="shop", category="query")


def _run(cases: list[CaseResult]) -> RunResult:
    meta = RunMeta(suite="shop", suite_hash="abc", fixtures={"shop": "f00d"}, agent="command:agent.py")
    return RunResult(meta=meta, summary=summarize(cases), cases=tuple(cases))


def _head_from_agent(tmp_path: Path, secrets: tuple[str, ...]) -> RunResult:
    """What the runner records for an agent that leaks: its Answer made into an errored CaseResult."""
    (tmp_path / "agent.py").write_text(LEAKY, encoding="utf-8")
    ctx = AgentContext(base_dir=str(tmp_path), options={"leak": f"{TOKEN} {MARKUP}"}, secrets=secrets)
    agent = make_agent(f"command:{PY} agent.py", ctx)
    cases = []
    for cid in ("leaky-1", "leaky-2"):
        answer = agent.answer(_case(cid))
        assert answer.error and answer.stderr
        cases.append(case_result(_case(cid), answer, None, agent_s=0.1, eval_s=0.0, answer_key=None))
    return _run(cases)


def _base() -> RunResult:
    return _run(
        [
            CaseResult(id=cid, status="passed", category="query", prediction=Prediction(sql="SELECT 1"))
            for cid in ("leaky-1", "leaky-2")
        ]
    )


def _all_reports(head: RunResult, base: RunResult, secrets: tuple[str, ...]) -> dict[str, str]:
    comparison = compare_runs(base, head)
    assert {c.id for c in comparison.cases if c.transition == "regressed"} == {"leaky-1", "leaky-2"}
    return {fmt: render(fmt, comparison, head=head, base=base, secrets=secrets) for fmt in FORMATS} | {
        "run-md": render("md", head, secrets=secrets),
        "run-html": render("html", head, secrets=secrets),
    }


def _leaks(text: str) -> list[str]:
    """Any recognisable piece of either secret, escaped or not."""
    pieces = ("A1b2C3d4E5f6", "G7h8I9j0K1l2", "sec&gt;", "sec>", "ret&#34;", 'ret"', "ret&quot;")
    return [p for p in pieces if p in text]


@pytest.mark.parametrize("where", ["agent boundary", "render time"])
def test_a_leaking_agent_leaves_no_secret_in_any_report(tmp_path: Path, where: str) -> None:
    secrets = (TOKEN, MARKUP)
    head = _head_from_agent(tmp_path, secrets if where == "agent boundary" else ())
    reports = _all_reports(head, _base(), () if where == "agent boundary" else secrets)
    for fmt, text in reports.items():
        assert "***" in text or r"\*\*\*" in text, fmt  # the reason is shown, masked (Markdown escapes `*`)
        assert _leaks(text) == [], f"{fmt} leaks {_leaks(text)}"


def test_the_control_without_secrets_shows_them_in_every_format(tmp_path: Path) -> None:
    reports = _all_reports(_head_from_agent(tmp_path, ()), _base(), ())
    for fmt, text in reports.items():
        assert "A1b2C3d4E5f6" in text, fmt  # the leak is there to be masked, in every format
    assert "ghp\\_A1b2" in reports["md"]  # ...escaped: why the subject is masked before rendering


def test_a_secret_cut_in_half_by_a_narrow_column_still_does_not_show(tmp_path: Path) -> None:
    # The comment keeps 220 characters of a reason: the cut lands inside the token.
    long_reason = "x" * 100 + TOKEN + "y" * 100
    case = CaseResult(id="leaky-1", status="failed", category="query", reason=long_reason)
    head = _run([case, CaseResult(id="leaky-2", status="passed", category="query")])
    text = render("md", compare_runs(_base(), head), secrets=(TOKEN,))
    assert _leaks(text) == [] and "ghp" not in text


def test_redaction_keeps_the_model_when_nothing_matches_and_masks_every_string() -> None:
    run = _base()
    assert redact_model(run, ("not-in-there",)) is run
    assert redact_model(run, ()) is run
    leaky = run.model_copy(
        update={"meta": run.meta.model_copy(update={"agent": f"command:agent --key {TOKEN}"})}
    )
    masked = redact_model(leaky, (TOKEN,))
    assert masked.meta.agent == "command:agent --key ***" and masked.cases == run.cases
    assert scrub_rendered(f"&lt;{MARKUP.replace('&', '&amp;')}", (MARKUP,)).startswith("&lt;")


# --- the sticky comment's marker ---------------------------------------------------------------------------------


def test_the_default_marker_is_unchanged_and_a_key_names_the_suite(tmp_path: Path) -> None:
    run = _base()
    assert render("md", run).startswith(MARKER + "\n")
    keyed = render("md", run, marker_key="shop/py3.12")
    assert keyed.startswith("<!-- sqlcanary:comment:shop/py3.12 -->\n")
    assert keyed.startswith(hidden_marker("shop/py3.12") + "\n")  # bot/github finds what the report wrote
    assert render("summary", run, marker_key="shop") == render("summary", run)  # only the comment has one


def test_the_marker_survives_the_shortest_form_of_the_comment() -> None:
    text = render_comment(_base(), limit=120, key="shop")
    assert text.startswith("<!-- sqlcanary:comment:shop -->\n") and len(text) <= 120


@pytest.mark.parametrize(
    "text", ["shop suite", "a--b", "x>y", "<!-- evil -->", "-leading", "ü-suite", "a" * 300, "---", "shop a"]
)
def test_any_text_becomes_a_key_that_cannot_break_the_html_comment(text: str) -> None:
    key = marker_key(text)
    assert valid_marker_key(key) and len(key) <= MAX_KEY_CHARS
    marker = marker_for(text)
    assert marker == comment_marker(key) == hidden_marker(key)
    inner = marker.removeprefix("<!--").removesuffix("-->")
    assert "--" not in inner and ">" not in inner and "<" not in inner
    assert re.fullmatch(r"<!-- sqlcanary:comment:[^\s]+ -->", marker)


def test_different_texts_keep_different_markers() -> None:
    assert marker_key("shop a") != marker_key("shop_a") != marker_key("shop/a")
    assert marker_key("shop") == "shop" and marker_key("") == ""
    assert marker_key("a" * 300) != marker_key("a" * 301)


@pytest.mark.parametrize("key", ["a b", "a--b", "x>", "<!--", "a" * (MAX_KEY_CHARS + 1)])
def test_comment_marker_refuses_an_unsafe_key(key: str) -> None:
    with pytest.raises(ValueError):
        comment_marker(key)
