"""Untrusted text cannot speak to the runner: what sqlcanary prints itself is escaped (bot.github.workflow
`plain_line`, the commands' own escaping), and whatever is printed inside `StepLog.fenced()`, by this process or a
child writing to the same log, is inert; the log is read back as the runner reads it (tests/support/step_log)."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest

from bot.github.workflow import StepLog, error, fence_token, notice, plain_line
from tests.support.step_log import commands, stopped_at_end

HOSTILE = [
    "names\n::set-output name=verdict::pass",
    "x\n::stop-commands::x\n::set-output name=verdict::pass\n::x::",
    "a%0A::set-output name=verdict::pass",
    "a\r::set-output name=verdict::pass",
    "  \t::add-mask::nothing",
    "\u200b::warning::forged",
    "see ##[set-output name=verdict;]pass",
    "::error file=x,line=1::forged",
]


def test_the_parser_sees_what_the_runner_would() -> None:
    """The reader itself: a raw hostile line is a command; a stop-commands fence silences everything until its
    token; a wrong token does not resume."""
    raw = "::set-output name=verdict::pass\n::stop-commands::tok\n::error::hidden\n::other::\n::tok::\n::notice::on"
    found = [(c.name, c.data) for c in commands(raw)]
    assert found == [("set-output", "pass"), ("stop-commands", "tok"), ("tok", ""), ("notice", "on")]
    assert [c.name for c in commands("x ##[set-output name=a;]b\r::debug::y")] == ["set-output", "debug"]
    assert stopped_at_end("::stop-commands::t\n") and not stopped_at_end("::stop-commands::t\n::t::\n")


@pytest.mark.parametrize("text", HOSTILE)
def test_a_plain_line_is_one_line_and_no_command(text: str) -> None:
    line = plain_line(f"sqlcanary: case {text}")
    assert "\n" not in line and "\r" not in line
    assert commands(line) == []
    assert commands(plain_line(text)) == []  # even without our prefix


@pytest.mark.parametrize("text", HOSTILE)
def test_our_commands_carry_hostile_text_as_data_only(text: str) -> None:
    line = error(text, title=text, file=f"cases/{text}.yml", line=3)
    [cmd] = commands(line)
    assert cmd.name == "error" and cmd.data == text
    assert cmd.props == {"title": text, "file": f"cases/{text}.yml", "line": "3"}


def test_inside_a_fence_nothing_speaks_and_our_commands_wait_for_its_end() -> None:
    out = io.StringIO()
    log = StepLog(out)
    log.command(notice("before"))
    with log.fenced():
        for text in HOSTILE:
            out.write(text + "\n")  # raw, as a careless print would
            log.say(text)
        log.command(notice("ours"))
        with log.fenced():  # a fence inside a fence is the same fence
            out.write("::set-output name=verdict::pass\n")
    log.command(error("after"))
    active = commands(out.getvalue())
    token = active[1].data
    assert [(c.name, c.data) for c in active] == [
        ("notice", "before"),
        ("stop-commands", token),
        (token, ""),
        ("notice", "ours"),
        ("error", "after"),
    ]


def test_each_fence_has_its_own_random_token() -> None:
    tokens = {fence_token() for _ in range(50)}
    assert len(tokens) == 50 and all(len(t) >= 32 for t in tokens)
    out = io.StringIO()
    log = StepLog(out)
    for _ in range(2):
        with log.fenced():
            pass
    starts = [c.data for c in commands(out.getvalue()) if c.name == "stop-commands"]
    assert len(starts) == 2 and starts[0] != starts[1]


CHILD = """
import os, sys
for text in {hostile!r}:
    print(text, file=sys.stderr, flush=True)
print("ENV:" + repr(dict(os.environ)), file=sys.stderr, flush=True)
"""

PARENT = """
import subprocess, sys
from bot.github.workflow import StepLog, notice
log = StepLog(sys.stdout)
with log.fenced():
    print({first!r}, flush=True)
    subprocess.run([sys.executable, "-c", {child!r}], check=True)  # inherits stdout and stderr
    print({first!r}, file=sys.stderr, flush=True)
    log.command(notice("done"))
"""


def test_a_child_writing_to_the_same_log_is_fenced_and_never_sees_the_token(tmp_path) -> None:
    child = textwrap.dedent(CHILD).format(hostile=HOSTILE)
    parent = textwrap.dedent(PARENT).format(first=HOSTILE[0], child=child)
    proc = subprocess.run(
        [sys.executable, "-c", parent],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    log = proc.stdout
    active = commands(log)
    token = active[0].data
    assert [c.name for c in active] == ["stop-commands", token, "notice"], log
    assert active[-1].data == "done"
    assert "set-output" in log  # the hostile lines are in the log, as text
    env_line = next(line for line in log.splitlines() if line.startswith("ENV:"))
    assert token not in env_line
