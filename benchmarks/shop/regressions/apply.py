"""Switch a planted KB regression on (or off) in a knowledge-base folder.

    python benchmarks/shop/regressions/apply.py missing_tz_filter            # edits benchmarks/shop/kb
    python benchmarks/shop/regressions/apply.py missing_tz_filter --kb DIR   # edits a copy
    python benchmarks/shop/regressions/apply.py missing_tz_filter --revert   # undoes it
    python benchmarks/shop/regressions/apply.py --list
    python benchmarks/shop/regressions/apply.py missing_tz_filter --patch    # print it as a unified diff
                                                  # (git apply --directory=benchmarks/shop applies it)

A regression is `regressions/<name>.yml`: `description`, `breaks` (the case ids it makes fail), optionally
`fixes` (case ids that fail on the shipped KB and pass with it: a mixed change), and `edits`, each
`{file, search, replace}` with `file` relative to the suite folder (`kb/metrics/dau.yaml`): the same
search/replace shape the repair loop proposes. `search` must occur exactly once; all edits apply or none.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_KB = HERE.parent / "kb"
KEYS = {"description", "breaks", "fixes", "edits"}


class RegressionError(Exception):
    pass


def names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.yml"))


def load_regression(name: str) -> dict[str, Any]:
    path = HERE / f"{name}.yml"
    if not path.is_file():
        raise RegressionError(f"no regression {name!r} (known: {', '.join(names())})")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not {"description", "breaks", "edits"} <= set(data) <= KEYS:
        raise RegressionError(f"{path}: needs the keys description, breaks, edits (and optionally fixes)")
    data.setdefault("fixes", [])
    for edit in data["edits"]:
        if set(edit) != {"file", "search", "replace"} or not str(edit["file"]).startswith("kb/"):
            raise RegressionError(f"{path}: each edit is {{file: kb/..., search, replace}}")
    return data


def planned_texts(data: dict[str, Any], kb: Path, *, revert: bool = False) -> dict[Path, str]:
    """The new text of every edited file, or RegressionError when an edit does not apply exactly once."""
    texts: dict[Path, str] = {}
    for edit in data["edits"]:
        path = kb / str(edit["file"]).removeprefix("kb/")
        old, new = (edit["replace"], edit["search"]) if revert else (edit["search"], edit["replace"])
        text = (
            texts.get(path) if path in texts else path.read_text(encoding="utf-8") if path.is_file() else None
        )
        if text is None:
            raise RegressionError(f"{path}: no such file")
        found = text.count(old)
        if found != 1:
            raise RegressionError(f"{path}: the text to replace occurs {found} times, expected once:\n{old}")
        texts[path] = text.replace(old, new)
    return texts


def apply_regression(name: str, kb: str | Path = DEFAULT_KB, *, revert: bool = False) -> list[Path]:
    """Apply (or revert) regression `name` to the KB folder `kb`; returns the files changed."""
    texts = planned_texts(load_regression(name), Path(kb), revert=revert)
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    return list(texts)


def render_patch(name: str, kb: str | Path = DEFAULT_KB) -> str:
    """The regression as a unified diff with paths relative to the suite folder (a/kb/metrics/dau.yaml)."""
    base = Path(kb)
    out = []
    for path, new in planned_texts(load_regression(name), base).items():
        rel = f"kb/{path.relative_to(base).as_posix()}"
        old = path.read_text(encoding="utf-8")
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
        )
        out.append("".join(diff))
    return "".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", help="regression name (a file in this folder without .yml)")
    parser.add_argument("--kb", default=str(DEFAULT_KB), help="KB folder to edit (default: the shop KB)")
    parser.add_argument("--revert", action="store_true", help="undo the regression")
    parser.add_argument("--list", action="store_true", help="list the regressions and what they break")
    parser.add_argument("--patch", action="store_true", help="print the regression as a diff, change nothing")
    args = parser.parse_args(argv)
    if args.list or not args.name:
        for name in names():
            data = load_regression(name)
            print(
                f"{name}: {data['description'].strip().splitlines()[0]}\n    breaks: {', '.join(data['breaks'])}"
            )
            if data["fixes"]:
                print(f"    fixes: {', '.join(data['fixes'])}")
        return 0
    try:
        if args.patch:
            print(render_patch(args.name, args.kb), end="")
            return 0
        changed = apply_regression(args.name, args.kb, revert=args.revert)
    except RegressionError as exc:
        print(f"apply.py: {exc}", file=sys.stderr)
        return 2
    verb = "reverted" if args.revert else "applied"
    print(f"{verb} {args.name}: " + ", ".join(str(p) for p in changed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
