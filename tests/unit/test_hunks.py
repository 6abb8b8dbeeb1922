"""Splitting a pull request's KB hunks into line changes, reverting any of them, and ddmin over them with a fake
evaluator that counts what it is asked."""

from __future__ import annotations

import difflib
import itertools
import random
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.attribution.delta import Status, attribute, ddmin
from bot.attribution.hunks import kb_changes, kb_relative, split_changes
from bot.attribution.revert import partial_revert
from bot.compare.diff import FileDiff, Hunk, parse_diff
from bot.config.model import load_config


def u0_hunks(old: str, new: str) -> tuple[Hunk, ...]:
    """The hunks `git diff --unified=0` writes (the start of an empty side is the line before it)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(
                Hunk(
                    old_start=i1 + 1 if i2 > i1 else i1,
                    old_count=i2 - i1,
                    new_start=j1 + 1 if j2 > j1 else j1,
                    new_count=j2 - j1,
                )
            )
    return tuple(out)


def changeset(files: dict[str, tuple[str | None, str | None]]):
    diff = [FileDiff(path=p, hunks=u0_hunks(old or "", new or "")) for p, (old, new) in files.items()]
    return split_changes(diff, {p: o for p, (o, _) in files.items()}, {p: n for p, (_, n) in files.items()})


BASE = "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\n"


def test_two_neighbouring_lines_edited_are_two_changes_and_each_reverts_alone():
    head = "a: 1\nb: 20\nc: 30\nd: 4\ne: 5\n"
    assert len(u0_hunks(BASE, head)) == 1  # git writes one hunk: -b -c +b +c
    cs = changeset({"kb/m.yaml": (BASE, head)})
    assert [(c.where, c.text) for c in cs.changes] == [
        ("line 2", "-b: 2\n+b: 20"),
        ("line 3", "-c: 3\n+c: 30"),
    ]
    assert cs.texts({1}) == {"kb/m.yaml": "a: 1\nb: 20\nc: 3\nd: 4\ne: 5\n"}
    assert cs.texts({0}) == {"kb/m.yaml": "a: 1\nb: 2\nc: 30\nd: 4\ne: 5\n"}
    assert cs.texts({0, 1}) == {"kb/m.yaml": BASE}
    assert cs.texts(()) == {"kb/m.yaml": head}


def test_a_hunk_with_context_splits_at_its_unchanged_lines():
    head = "a: 1\nb: 20\nc: 3\nd: 40\ne: 5\n"
    text = (
        "diff --git a/kb/m.yaml b/kb/m.yaml\n--- a/kb/m.yaml\n+++ b/kb/m.yaml\n"
        "@@ -1,5 +1,5 @@\n a: 1\n-b: 2\n+b: 20\n c: 3\n-d: 4\n+d: 40\n e: 5\n"
    )
    (diff,) = parse_diff(text)
    assert len(diff.hunks) == 1
    cs = split_changes([diff], {"kb/m.yaml": BASE}, {"kb/m.yaml": head})
    assert [c.where for c in cs.changes] == ["line 2", "line 4"]
    assert cs.texts({1}) == {"kb/m.yaml": "a: 1\nb: 20\nc: 3\nd: 4\ne: 5\n"}


def test_an_edited_line_and_an_inserted_one_pair_by_likeness():
    head = "a: 1\nb: 22\nx: new metric\nc: 3\nd: 4\ne: 5\n"
    base = "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\n"
    cs = changeset({"kb/m.yaml": (base, head)})
    assert [(c.old_lines, c.new_lines) for c in cs.changes] == [
        (("b: 2\n",), ("b: 22\n",)),
        ((), ("x: new metric\n",)),
    ]
    assert [c.where for c in cs.changes] == ["line 2", "line 3"]
    assert cs.texts({1}) == {"kb/m.yaml": "a: 1\nb: 22\nc: 3\nd: 4\ne: 5\n"}
    assert cs.texts({0}) == {"kb/m.yaml": "a: 1\nb: 2\nx: new metric\nc: 3\nd: 4\ne: 5\n"}


def test_removed_lines_added_and_removed_files():
    cs = changeset(
        {
            "kb/del.yaml": (BASE, "a: 1\ne: 5\n"),
            "kb/new.yaml": (None, "n: 1\n"),
            "kb/gone.yaml": ("g: 1\n", None),
        }
    )
    by_file = {c.file: c for c in cs.changes}
    assert by_file["kb/del.yaml"].where == "lines 2–4 (removed)"
    assert cs.texts(cs.ids) == {"kb/del.yaml": BASE, "kb/new.yaml": None, "kb/gone.yaml": "g: 1\n"}
    assert cs.texts(()) == {"kb/del.yaml": "a: 1\ne: 5\n", "kb/new.yaml": "n: 1\n", "kb/gone.yaml": None}


def test_a_diff_that_does_not_fit_the_texts_leaves_the_file_out():
    diff = [FileDiff(path="kb/m.yaml", hunks=(Hunk(old_start=9, old_count=1, new_start=9, new_count=1),))]
    cs = split_changes(diff, {"kb/m.yaml": BASE}, {"kb/m.yaml": BASE})
    assert cs.changes == () and cs.skipped and cs.skipped[0].startswith("kb/m.yaml:")


@pytest.mark.parametrize("seed", range(40))
def test_any_subset_reverted_then_the_rest_gives_the_base(seed: int):
    """Random edits: reverting everything gives the base back, nothing gives the head, and reverting a subset and
    then (from that text as a head) the rest also gives the base."""
    rng = random.Random(seed)
    base_lines = [f"k{i}: {rng.randint(0, 9)}\n" for i in range(rng.randint(0, 12))]
    head_lines = list(base_lines)
    for _ in range(rng.randint(1, 6)):
        op = rng.choice(["edit", "insert", "delete"])
        at = rng.randint(0, len(head_lines))
        if op == "insert" or not head_lines:
            head_lines.insert(at, f"n{rng.randint(0, 99)}: new\n")
        elif op == "edit":
            head_lines[min(at, len(head_lines) - 1)] = f"k{at}: edited {rng.randint(0, 99)}\n"
        else:
            del head_lines[min(at, len(head_lines) - 1)]
    base, head = "".join(base_lines), "".join(head_lines)
    cs = changeset({"kb/r.yaml": (base, head)})
    assert cs.texts(cs.ids) == {"kb/r.yaml": base}
    assert cs.texts(()) == {"kb/r.yaml": head}
    for size in range(len(cs.changes) + 1):
        for subset in itertools.islice(itertools.combinations(sorted(cs.ids), size), 8):
            middle = cs.texts(set(subset))["kb/r.yaml"] or ""
            again = changeset({"kb/r.yaml": (base, middle)})
            assert again.texts(again.ids).get("kb/r.yaml", middle) == base


def test_only_kb_files_count_and_texts_come_from_both_trees(tmp_path: Path):
    for side, value in (("base", "2"), ("head", "20")):
        root = tmp_path / side
        (root / "an/kb").mkdir(parents=True)
        (root / "an/sqlcanary.yml").write_text("kb:\n  paths: ['kb/**/*.yaml']\n")
        (root / "an/kb/m.yaml").write_text(f"a: 1\nb: {value}\n")
        (root / "an/agent.py").write_text(f"X = {value}\n")
    config = load_config(tmp_path / "head/an/sqlcanary.yml")
    assert kb_relative("an/kb/m.yaml", config, tmp_path / "head") == "kb/m.yaml"
    assert kb_relative("an/agent.py", config, tmp_path / "head") is None
    assert kb_relative("elsewhere/kb/m.yaml", config, tmp_path / "head") is None
    one = Hunk(old_start=2, old_count=1, new_start=2, new_count=1)
    diff = [FileDiff(path="an/kb/m.yaml", hunks=(one,)), FileDiff(path="an/agent.py", hunks=(one,))]
    diff[1] = FileDiff(path="an/agent.py", hunks=(Hunk(old_start=1, old_count=1, new_start=1, new_count=1),))
    cs = kb_changes(diff, config=config, base_root=tmp_path / "base", head_root=tmp_path / "head")
    assert [(c.file, c.text) for c in cs.changes] == [("an/kb/m.yaml", "-b: 2\n+b: 20")]


def test_a_real_git_diff_splits_the_same_way(tmp_path: Path):
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "m.yaml").write_text(BASE)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    head = "a: 1\nb: 20\nc: 30\nd: 4\nnew: 9\ne: 5\n"
    (tmp_path / "m.yaml").write_text(head)
    out = subprocess.run(
        [*git, "diff", "--unified=0", "HEAD", "--"], check=True, capture_output=True, text=True
    )
    cs = split_changes(parse_diff(out.stdout), {"m.yaml": BASE}, {"m.yaml": head})
    assert [c.where for c in cs.changes] == ["line 2", "line 3", "line 5"]
    assert cs.texts(cs.ids) == {"m.yaml": BASE}


# ---------------------------------------------------------------------------------------------------------------
# ddmin and attribution, with a fake evaluator


class Fake:
    """Case `id` passes when its rule holds for the reverted set; counts asks like agent calls."""

    def __init__(self, rules: dict[str, object]) -> None:
        self.rules = rules
        self.agent_calls = 0
        self.asked: list[tuple[frozenset[int], tuple[str, ...]]] = []

    def evaluate(self, reverted: frozenset[int], ids: Sequence[str]) -> dict[str, Status]:
        self.asked.append((reverted, tuple(ids)))
        self.agent_calls += len(ids)
        return {i: Status("passed" if self.rules[i](reverted) else "failed", "wrong rows") for i in ids}  # type: ignore[operator]


def test_ddmin_finds_a_single_cause_in_few_asks():
    for cause in range(16):
        asked: list[frozenset[int]] = []

        def test(s: frozenset[int], cause: int = cause, asked: list = asked) -> bool:
            asked.append(s)
            return cause in s

        assert ddmin(range(16), test) == (cause,)
        assert len(asked) <= 2 * 4  # two halves per level, log2(16) levels


def test_ddmin_finds_two_changes_needed_together():
    assert ddmin(range(10), lambda s: {2, 7} <= s) == (2, 7)
    assert ddmin(range(10), lambda s: {0, 1, 9} <= s) == (0, 1, 9)
    assert ddmin(range(10), lambda s: bool({4, 5} & s)) in ((4,), (5,))  # either suffices: one is named


def edits(n: int):
    base = "".join(f"k{i}: {i}\n\n" for i in range(n))  # blank lines between: every edit is a hunk of its own
    head = "".join(f"k{i}: {i * 10 + 1}\n\n" for i in range(n))
    return changeset({"kb/m.yaml": (base, head)})


def test_attribute_names_the_causal_change_per_case_and_asks_only_the_affected_cases():
    cs = edits(8)
    fake = Fake(
        {
            "r1": lambda s: 5 in s,
            "r2": lambda s: 5 in s,
            "r3": lambda s: {1, 6} <= s,
            "drift": lambda s: False,  # not the KB: fails whatever is reverted
        }
    )
    result = attribute(["r1", "r2", "r3", "drift"], cs, fake)
    assert {c.id: (c.verdict, c.changes) for c in result.cases} == {
        "r1": ("caused", (5,)),
        "r2": ("caused", (5,)),
        "r3": ("caused", (1, 6)),
        "drift": ("not_kb", ()),
    }
    assert result.causes("r1")[0].where == "line 11"
    assert result.causal == (1, 5, 6)
    assert fake.asked[0] == (cs.ids, ("drift", "r1", "r2", "r3"))  # every case once with everything reverted
    assert all(len(ids) == 1 for _, ids in fake.asked[1:])  # then each case alone
    assert len({(s, ids) for s, ids in fake.asked}) == len(fake.asked)  # no configuration asked twice
    assert result.agent_calls == fake.agent_calls == result.asked <= 4 + 3 * 12


def test_attribute_stops_at_the_call_budget():
    fake = Fake({"r1": lambda s: 3 in s, "r2": lambda s: 4 in s})
    result = attribute(["r1", "r2"], edits(8), fake, max_agent_calls=4)
    assert fake.agent_calls <= 4 + 1
    assert "budget" in result.stopped
    assert any(c.verdict == "undecided" for c in result.cases)


def test_partial_revert_keeps_the_fix_of_a_mixed_hunk_and_refuses_a_whole_revert():
    base = "a: 1\nb: wrong\nc: 3\n"
    head = "a: 1\nb: right\nc: broken\n"  # one hunk: line 2 fixes `fixed`, line 3 breaks `broke`
    cs = changeset({"kb/m.yaml": (base, head)})
    fake = Fake({"fixed": lambda s: 0 not in s, "broke": lambda s: 1 in s, "other": lambda s: True})
    result = attribute(["broke"], cs, fake)
    assert result.of("broke").changes == (1,)
    head_statuses = {"fixed": "passed", "broke": "failed", "other": "passed"}
    rev = partial_revert(result, cs, fake, head=head_statuses, regressed=["broke"], base_pass_rate=2 / 3)
    assert rev.holds, rev.reason
    assert rev.files == {"kb/m.yaml": "a: 1\nb: right\nc: 3\n"}
    assert "-c: broken\n+c: 3\n" in rev.diff and "-b:" not in rev.diff and "+b:" not in rev.diff
    assert {c.id: c.verdict for c in rev.cases} == {"fixed": "kept", "broke": "restored", "other": "kept"}
    assert (rev.head_pass_rate, rev.reverted_pass_rate) == (2 / 3, 1.0)
    assert [c.where for c in rev.kept] == ["line 2"]
    # when every change is causal, reverting them all is the whole pull request: no partial revert
    both = Fake({"fixed": lambda s: True, "broke": lambda s: {0, 1} <= s, "other": lambda s: True})
    whole = partial_revert(attribute(["broke"], cs, both), cs, both, head=head_statuses)
    assert not whole.holds and "whole revert" in whole.reason


def test_partial_revert_that_breaks_a_passing_case_does_not_hold():
    cs = edits(3)
    fake = Fake({"r": lambda s: 1 in s, "p": lambda s: 1 not in s})
    rev = partial_revert(attribute(["r"], cs, fake), cs, fake, head={"r": "failed", "p": "passed"})
    assert not rev.holds and "p" in rev.reason and rev.broken == ("p",)
