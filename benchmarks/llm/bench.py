"""The LLM benchmark: sqlcanary's llm agent and repair loop against a real small model served locally.

    python -m benchmarks.llm.bench                      # everything, 1.5B model (~40-60 min on 2 busy cores)
    python -m benchmarks.llm.bench --only repair --regressions cpc_wrong_denominator,wrong_synonym
    python -m benchmarks.llm.bench --agent-cases all    # the whole suite for (a) (+~11 min warm)
    python -m benchmarks.llm.bench --snapshot HEAD      # judge a commit's bot/ + templates/, not the work tree
    python -m benchmarks.llm.bench --no-llm             # (d) only, revert only, no model (~10 min)
    python -m benchmarks.llm.bench --dry-run            # set up, check the model without fetching, stop

One run prints, and writes to --out (results.json, table.md, the sqlcanary logs):
(a) the llm agent on the shop suite beside the reference agent. Default subset: every 4th case in suite order
    (21 of 84, all categories), because one case costs ~8 s warm and the first ~200 s cold on 2 cores;
(b) the repair loop on each planted regression (benchmarks/shop/regressions): plant it in a temporary git copy
    of the shop, `sqlcanary check` against main, `sqlcanary repair --from-check` with at most 12 LLM calls,
    then judge with the reference agent: fixed, suite green, plans proposed / refused (why) / kept, calls,
    tokens, seconds;
(c) `--repeat 3` at temperature 0.7 on a few cases: does a flaky model show up as flaky?
(d) each planted regression's repair pull request, made as the Action makes it (`run_check` with hunk
    attribution, then bot.modes.repair.repair_step against tests/support's fake GitHub and a real bare
    repository): opened or not, the files it changes, pass rates base -> head -> repaired, fixed-by (LLM edit,
    revert, none), and the reference agent's judgement of the repair branch.
    `--no-llm` runs (d) alone with no model (revert only): about 10 minutes on 2 busy cores.

It fetches the model (benchmarks/llm/setup.py) when it is not there yet: running this is asking for it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python benchmarks/llm/bench.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.llm import report, setup
from benchmarks.llm.prflow import LLMEndpoint, run_flow
from benchmarks.llm.report import pr_row
from benchmarks.llm.server import local_server, metrics
from benchmarks.llm.workspace import (
    REPO,
    Sqlcanary,
    git,
    make_shop_repo,
    regression_names,
    repair_regression,
)

REPEAT_CASES = ("shop-commerce-gmv-id-q3", "shop-traffic-dau-id-nov", "shop-ads-cpc-by-region-q4")


def snapshot(ref: str, dest: Path) -> Path:
    """`git archive REF bot templates` into dest: the product as committed, whatever the work tree holds."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", ref, "bot", "templates"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def product_state(ref: str | None) -> str:
    head = subprocess.run(
        ["git", "log", "-1", "--format=%h %s", ref or "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    if ref:
        return f"snapshot of {head[:120]}"
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "bot", "templates"], cwd=REPO, capture_output=True, text=True
    ).stdout.split("\n")
    n = sum(1 for line in dirty if line.strip())
    return f"work tree at {head[:120]}" + (f" + {n} uncommitted file(s) under bot/, templates/" if n else "")


def run_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def agent_phase(base: Path, sq: Sqlcanary, srv, out: Path, which: str) -> dict[str, Any]:
    """(a): the reference agent on the whole suite, then the llm agent on the subset `which`."""
    code, _, secs = sq(base, "run", "--out", str(out / "reference.json"), "-q", "--no-answer-cache")
    ref = run_json(out / "reference.json")
    ids = [c["id"] for c in ref.get("cases", [])]
    chosen = ids if which == "all" else ids[:: int(which.removeprefix("every"))]
    args = [
        "run",
        "--agent",
        "llm",
        "--agent-timeout",
        "1800",
        "--jobs",
        "1",
        "--out",
        str(out / "llm.json"),
        "-q",
    ]
    before, start = metrics(srv), time.monotonic()
    llm_code, _, _ = sq(base, *args, *(a for i in chosen for a in ("--id", i)))
    seconds, after = time.monotonic() - start, metrics(srv)
    llm = run_json(out / "llm.json")
    ref_on = {c["id"]: c["status"] for c in ref.get("cases", []) if c["id"] in chosen}
    return {
        "subset": which,
        "ids": chosen,
        "reference_exit": code,
        "reference_seconds": secs,
        "reference": ref.get("summary", {}),
        "reference_on_subset": sum(s == "passed" for s in ref_on.values()),
        "llm_exit": llm_code,
        "llm": llm.get("summary", {}),
        "llm_seconds": seconds,
        "llm_meta": {k: v for k, v in llm.get("meta", {}).items() if "llm" in k or k in ("agent_calls",)},
        "server": report.delta(before, after),
        "cases": [
            {
                "id": c["id"],
                "category": c.get("category"),
                "status": c["status"],
                "reason": (c.get("reason") or "")[:300],
                "sql": (c.get("prediction") or {}).get("sql"),
            }
            for c in llm.get("cases", [])
        ],
    }


def repeat_phase(base: Path, sq: Sqlcanary, srv, out: Path, cases: list[str]) -> dict[str, Any]:
    """(c): the llm agent, --repeat 3 at temperature 0.7, on `cases`."""
    cfg = (base / "sqlcanary.yml").read_text(encoding="utf-8")
    # The reply cache stays on here (the default): a cache key without the attempt would replay one answer.
    t07 = cfg.replace("llm:\n", "llm:\n  temperature: 0.7\n", 1).replace("cache: false", "cache: true")
    (base / "sqlcanary-t07.yml").write_text(t07, "utf-8")
    before, start = metrics(srv), time.monotonic()
    code, _, _ = sq(
        base,
        "run",
        "--config",
        "sqlcanary-t07.yml",
        "--agent",
        "llm:sqlcanary-t07.yml",
        "--agent-timeout",
        "1800",
        "--jobs",
        "1",
        "--repeat",
        "3",
        "--out",
        str(out / "repeat.json"),
        "-q",
        *(a for i in cases for a in ("--id", i)),
    )
    data = run_json(out / "repeat.json")
    rows = []
    for c in data.get("cases", []):
        attempts = c.get("attempts") or []
        rows.append(
            {
                "id": c["id"],
                "status": c["status"],
                "passed": sum(a["status"] == "passed" for a in attempts),
                "attempts": len(attempts),
                "distinct_sql": len({a.get("sql") for a in attempts}),
            }
        )
    return {
        "exit": code,
        "seconds": time.monotonic() - start,
        "cases": rows,
        "server": report.delta(before, metrics(srv)),
        "meta": {k: v for k, v in data.get("meta", {}).items() if "llm" in k or "agent_calls" in k},
    }


def pr_phase(
    base: Path, work: Path, names: list[str], *, llm: LLMEndpoint | None, max_llm_calls: int, pythonpath
) -> list[dict[str, Any]]:
    """(d): each planted regression's repair pull request, made as the Action makes it (prflow.py)."""
    rows = []
    for name in names:
        flow = run_flow(base, name, work, llm=llm, max_llm_calls=max_llm_calls, pythonpath=pythonpath)
        (work / f"{name}-prflow.log").write_text(flow.pop("log", ""), "utf-8")
        rows.append({**pr_row(flow), "flow": flow})
        print(report.pr_line(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(setup.MODELS), default="1.5b")
    p.add_argument(
        "--only", default="agent,repeat,repair,pr", help="phases, comma-separated: agent,repeat,repair,pr"
    )
    p.add_argument(
        "--no-llm",
        action="store_true",
        help="no model, no server: only (d), each repair PR with the verified partial revert (~10 min)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="set up the work folder and the shop repository, check the model without fetching it, print the "
        "plan and stop",
    )
    p.add_argument("--agent-cases", default="every4", help="every4 (default), everyN or all")
    p.add_argument("--regressions", default="all", help="comma-separated names (default: every planted one)")
    p.add_argument("--repeat-cases", default=",".join(REPEAT_CASES))
    p.add_argument("--max-llm-calls", type=int, default=12, help="per regression (default 12: the target)")
    p.add_argument("--snapshot", metavar="REF", help="run REF's bot/ and templates/ instead of the work tree")
    p.add_argument(
        "--out", type=Path, help="folder for results.json, table.md, logs (default: a temp folder)"
    )
    args = p.parse_args(argv)
    known = set(regression_names())
    args.names = sorted(known) if args.regressions == "all" else args.regressions.split(",")
    if unknown := [n for n in args.names if n not in known]:
        p.error(f"--regressions: unknown {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    args.phases = {"pr"} if args.no_llm else set(args.only.split(","))
    if unknown := args.phases - {"agent", "repeat", "repair", "pr"}:
        p.error(f"--only: unknown phase(s) {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str]) -> int:
    args = _args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the server is stopped, results written
    work = Path(tempfile.mkdtemp(prefix="sqlcanary-llm-bench-"))
    work.chmod(0o755)  # as root, the agent runs as a user of its own and must reach the shop copies
    out = args.out or work / "out"
    out.mkdir(parents=True, exist_ok=True)
    pythonpath = snapshot(args.snapshot, work / "product") if args.snapshot else None
    results: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "model": "none (--no-llm)" if args.no_llm else setup.MODELS[args.model].name,
        "product": product_state(args.snapshot),
        "phases": sorted(args.phases),
        "pr_mode": "revert only, no LLM"
        if args.no_llm
        else f"LLM edit first, at most {args.max_llm_calls} calls",
    }
    start = time.monotonic()
    print(f"bench: {results['model']}; product: {results['product']}; work: {work}", file=sys.stderr)
    base = make_shop_repo(work / "base")
    if args.dry_run:
        have = None if args.no_llm else setup.installed(args.model)
        model = "not needed" if args.no_llm else str(have.model) if have else "not set up: the run fetches it"
        print(
            f"dry run: phases {', '.join(sorted(args.phases))}; regressions {', '.join(args.names)}; "
            f"shop repository {base} at {git(base, 'rev-parse', '--short', 'HEAD').strip()}; model: {model}"
        )
        return 0
    try:
        if args.no_llm:
            results["pr"] = pr_phase(base, work, args.names, llm=None, max_llm_calls=0, pythonpath=pythonpath)
            print(report.pr_table(results["pr"]), flush=True)
        else:
            installed = setup.ensure(args.model, log=lambda m: print(f"setup: {m}", file=sys.stderr))
            with local_server(installed, log_dir=out) as srv:
                sq = Sqlcanary(base_url=srv.base_url, model=srv.model, pythonpath=pythonpath)
                try:
                    _llm_phases(results, args, base, work, out, sq, srv, pythonpath)
                finally:
                    (out / "sqlcanary.log").write_text("\n\n".join(sq.log), "utf-8")
    finally:
        results["seconds"] = time.monotonic() - start
        (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n", "utf-8")
        (out / "table.md").write_text(report.markdown(results), "utf-8")
    print(f"\nwritten to {out}/ (results.json, table.md, sqlcanary.log, server.log)")
    return 0


def _llm_phases(results, args, base, work, out, sq, srv, pythonpath) -> None:
    if "agent" in args.phases:
        results["agent"] = agent_phase(base, sq, srv, out, args.agent_cases)
        print(report.agent_table(results["agent"]), flush=True)
    if "repeat" in args.phases:
        results["repeat"] = repeat_phase(base, sq, srv, out, args.repeat_cases.split(","))
        print(report.repeat_table(results["repeat"]), flush=True)
    if "repair" in args.phases:
        results["repair"] = []
        for name in args.names:
            before, t0 = metrics(srv), time.monotonic()
            r = repair_regression(base, name, work, sq, max_llm_calls=args.max_llm_calls)
            results["repair"].append(
                report.repair_row(r, server=report.delta(before, metrics(srv)), wall=time.monotonic() - t0)
            )
            print(report.repair_line(results["repair"][-1]), file=sys.stderr, flush=True)
        print(report.repair_table(results["repair"]), flush=True)
    if "pr" in args.phases:
        llm = LLMEndpoint(srv.base_url, srv.model)
        results["pr"] = pr_phase(
            base, work, args.names, llm=llm, max_llm_calls=args.max_llm_calls, pythonpath=pythonpath
        )
        print(report.pr_table(results["pr"]), flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
