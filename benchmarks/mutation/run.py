"""Mutation testing of the verdict code: does a test fail when the decision logic changes? (issue 18)

    python -m benchmarks.mutation.run [--modules scoring/values compare/gate ...] [--max-children 2] [--confirm]
                                      [--table-only] [--survivors]

Runs mutmut 3 (the `test` extra; settings in pyproject.toml's [tool.mutmut]) over the decision modules, one mutant
at a time in a forked test process: the unit tests (tests/unit) and every annotated pair of tests/fixtures/verdicts
run through the CLI on PostgreSQL (benchmarks/mutation/test_verdict_fixtures.py, one test for all pairs). mutmut
runs, for each mutant, the tests that reached the mutated function in a first traced run. Then prints a table per
module: mutants, killed, survived (mutmut's "no tests" counted as survived), timeout, killed %.

mutmut works in ./mutants (a mutated copy of bot/ and the tests; git-ignored) and keeps each mutant's result there:
`mutmut show NAME` prints a mutant's diff, `mutmut results` lists survivors. benchmarks/mutation/RESULTS.md holds
the last table and names every survivor.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = (  # in the order issue 18 asks for them
    "scoring/values",
    "scoring/order",
    "compare/gate",
    "compare/transitions",
    "compare/comparison",
    "compare/comparable",
)
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "survived", 33: "survived", 36: "timeout"}
TIMEOUTS = {24, -24, 152, 255}  # SIGXCPU and friends: mutmut's timeouts
COLUMNS = ("module", "mutants", "killed", "survived", "timeout", "killed %")


def module_glob(module: str) -> str:
    return "bot." + module.replace("/", ".").removesuffix(".py") + ".*"


def meta_path(module: str) -> Path:
    return REPO / "mutants" / "bot" / f"{module.removesuffix('.py')}.py.meta"


def status_of(code: int | None) -> str:
    if code is None:
        return "not checked"
    return "timeout" if code in TIMEOUTS else STATUS.get(code, "other")


def counts(module: str) -> Counter[str]:
    path = meta_path(module)
    if not path.exists():
        return Counter()
    codes = json.loads(path.read_text(encoding="utf-8"))["exit_code_by_key"]
    return Counter(status_of(code) for code in codes.values())


def survivors(module: str) -> list[str]:
    path = meta_path(module)
    if not path.exists():
        return []
    codes = json.loads(path.read_text(encoding="utf-8"))["exit_code_by_key"]
    return sorted(name for name, code in codes.items() if status_of(code) == "survived")


def _function_line(lines: list[str], mutant: str) -> int:
    """The line (0-based) of the function a mutant changes: `x_close`, `x__pct`, `xǁJsonǁ__init__`."""
    name = mutant.rpartition(".")[2].rsplit("__mutmut_", 1)[0]
    if name.startswith("xǁ"):
        cls, _, func = name[2:].partition("ǁ")
        start = next(i for i, line in enumerate(lines) if line.startswith(f"class {cls}"))
    else:
        start, func = 0, name[2:]
    return next(i for i, line in enumerate(lines) if i >= start and line.lstrip().startswith(f"def {func}("))


def describe(module: str, mutant: str) -> tuple[int, str, str]:
    """(line, what was there, what the mutant wrote) for one mutant, from `mutmut show`."""
    shown = subprocess.run(
        [sys.executable, "-m", "mutmut", "show", mutant],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    minus = [line[1:].strip() for line in shown if line.startswith("-") and not line.startswith("---")]
    plus = [line[1:].strip() for line in shown if line.startswith("+") and not line.startswith("+++")]
    lines = (REPO / "bot" / f"{module}.py").read_text(encoding="utf-8").splitlines()
    start = _function_line(lines, mutant)
    first = minus[0] if minus else ""
    at = next((i for i in range(start, len(lines)) if lines[i].strip() == first), start)
    return at + 1, " ".join(minus), " ".join(plus)


def table(modules: list[str]) -> str:
    rows = [COLUMNS, tuple("---" for _ in COLUMNS)]
    for module in modules:
        c = counts(module)
        total = sum(c.values())
        pct = f"{100 * c['killed'] / total:.1f}" if total else "n/a"
        rows.append(
            (f"bot/{module}.py", str(total), str(c["killed"]), str(c["survived"]), str(c["timeout"]), pct)
        )
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def killed(module: str) -> list[str]:
    path = meta_path(module)
    codes = json.loads(path.read_text(encoding="utf-8"))["exit_code_by_key"] if path.exists() else {}
    return sorted(name for name, code in codes.items() if status_of(code) == "killed")


def run_mutmut(names: list[str], max_children: int) -> int:
    env = dict(os.environ)
    env.setdefault("SQLCANARY_SHARED", str(REPO.parent / "shared"))  # the copy in ./mutants has no ../shared
    env.setdefault("PYTHONHASHSEED", "0")  # the same set and dict orders in every run: results repeat
    argv = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *names]
    shown = names if len(names) <= 6 else [*names[:3], f"... ({len(names)} mutants)"]
    print("$", " ".join([*argv[1:6], *shown]), flush=True)
    return subprocess.run(argv, cwd=REPO, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--modules", nargs="+", default=list(MODULES), help="e.g. scoring/values compare/gate"
    )
    parser.add_argument("--max-children", type=int, default=2, help="parallel test processes (default 2)")
    parser.add_argument("--table-only", action="store_true", help="print the last results, run nothing")
    parser.add_argument("--survivors", action="store_true", help="also list the surviving mutants' names")
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="run every killed mutant a second time: a kill that does not repeat (a test that failed for another "
        "reason, such as a loaded machine) is recorded as it comes out the second time",
    )
    args = parser.parse_args(argv)
    modules = [m.removeprefix("bot/").removesuffix(".py") for m in args.modules]
    unknown = [m for m in modules if not (REPO / "bot" / f"{m}.py").is_file()]
    if unknown:
        parser.error(f"no such module under bot/: {', '.join(unknown)}")
    rc = 0 if args.table_only else run_mutmut([module_glob(m) for m in modules], args.max_children)
    if args.confirm and not args.table_only:
        first = table(modules)
        print("\nfirst pass:\n" + first + "\n\nconfirming the kills:", flush=True)
        rc = run_mutmut([name for m in modules for name in killed(m)], args.max_children) or rc
    print()
    print(table(modules))
    if args.survivors:
        for module in modules:
            for name in survivors(module):
                line, was, now = describe(module, name)
                print(f"survived: {name} | bot/{module}.py:{line} | `{was}` -> `{now}`")
    return rc


if __name__ == "__main__":
    sys.exit(main())
