"""Suite loading: libyaml's parser against PyYAML's pure-Python one, in the same run (issue 26).

    python benchmarks/perf/suite_load.py [--shared ../shared] [--copies 16] [--rounds 3]

Imports the defog suite (419 cases) and writes a copy holding it `--copies` times (6,704 cases at 16, each id
made unique), then loads both with bot.cases.loader.load_suite, alternately: with the same line-keeping
constructors over PyYAML's pure-Python parser (before), over libyaml's parser (what sqlcanary uses), and over
libyaml with the statement counts an earlier run kept (bot.cases.sqlparse: a warm run parses no gold to load
it). Each load starts with no parse tree cached. Prints milliseconds per case and the ratios, and checks that
both parsers give the same cases.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
ROW = "{:<12} {:>6} {:>10} {:>10} {:>13} {:>5} {:>7}"
sys.path.insert(0, str(REPO))

from defog_data import SHARED, defog_source  # noqa: E402 - beside this script

from bot.base import yamlread  # noqa: E402
from bot.cases.importers import import_defog  # noqa: E402
from bot.cases.loader import load_suite  # noqa: E402
from bot.cases.sqlparse import parsed, remembered  # noqa: E402


class PureLoader(yaml.SafeLoader):
    """sqlcanary's loader over PyYAML's pure-Python parser: the same constructors and resolvers."""


PureLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, yamlread._construct_mapping)
PureLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, yamlread._construct_sequence)
PureLoader.yaml_implicit_resolvers = yamlread._Loader.yaml_implicit_resolvers


def multiplied(suite: Path, out: Path, copies: int) -> Path:
    """`suite` with its case files repeated `copies` times, each copy's ids suffixed."""
    shutil.copytree(suite, out)
    cases = out / "cases"
    originals = sorted(cases.rglob("*.yml"))
    for n in range(1, copies):
        for path in originals:
            text = path.read_text().replace("- id: ", f"- id: x{n}-")
            path.with_name(f"{path.stem}-x{n}.yml").write_text(text)
    return out


def timed(location: Path, loader: type, memo: Path | None = None) -> tuple[float, int]:
    """One load of the suite in a process that never parsed its golds (the parse trees' cache is emptied), with
    the statement counts of an earlier run's memo when `memo` is given (a warm `sqlcanary run`)."""
    yamlread._Loader = loader  # type: ignore[misc]
    parsed.cache_clear()
    start = time.perf_counter()
    with remembered(memo):
        suite = load_suite(location)
    return time.perf_counter() - start, len(suite.cases)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=SHARED)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    src = defog_source(args.shared)
    if src is None:
        return 2
    ours = yamlread._Loader
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "defog"
        import_defog(src, one)
        many = multiplied(one, Path(tmp) / f"defog-x{args.copies}", args.copies)
        memo = Path(tmp) / "memo"
        print(ROW.format("suite", "cases", "pure", "libyaml", "libyaml+memo", "x", "x memo"))
        for name, location in (("defog", one), (f"defog x{args.copies}", many)):
            timed(location, ours, memo)  # the run before: it leaves the memo
            pure, fast, warm, n = [], [], [], 0
            for _ in range(args.rounds):
                t, n = timed(location, PureLoader)
                pure.append(t)
                fast.append(timed(location, ours)[0])
                warm.append(timed(location, ours, memo)[0])
            p, f, w = (statistics.median(x) for x in (pure, fast, warm))
            cells = [f"{1000 * v / n:.2f} ms" for v in (p, f, w)] + [f"{p / f:.1f}", f"{p / w:.1f}"]
            print(ROW.format(name, n, *cells))
        print("(milliseconds per case; x: pure-Python parser / libyaml, without and with the memo)")
        yamlread._Loader = ours  # type: ignore[misc]
        a = {c.id: c for c in load_suite(many).cases}
        yamlread._Loader = PureLoader  # type: ignore[misc]
        b = {c.id: c for c in load_suite(many).cases}
        print("same cases from both parsers:", a == b)
        return 0 if a == b else 1


if __name__ == "__main__":
    sys.exit(main())
