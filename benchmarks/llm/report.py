"""Tables for the LLM benchmark (bench.py): plain dicts in, Markdown out, so results.json can be re-rendered
and the README's table is the one the run printed."""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.llm.workspace import RepairResult, known_failing, regression_manifest

# What kind of KB mistake each planted regression is (benchmarks/shop/regressions).
KINDS = {
    "cpc_wrong_denominator": "changed value",
    "ctr_ratio_swapped": "two swapped values",
    "dau_sum_not_avg": "wrong aggregation",
    "missing_tz_filter": "list emptied",
    "sea_group_missing_ph": "missing list member",
    "snippet_missing_status_filter": "removed line",
    "stale_orders_table": "changed value, 2 files",
    "vietnam_alias_renamed": "mixed hunk",
    "weekend_filter_removed": "removed block",
    "wrong_join_snippet": "changed value",
    "wrong_synonym": "moved list member",
}


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What the server did between two /metrics reads (counters only)."""
    keys = (
        "prompt_tokens_total",
        "prompt_tokens_cached_total",
        "tokens_predicted_total",
        "prompt_seconds_total",
        "tokens_predicted_seconds_total",
    )
    return {
        k.removesuffix("_total"): round(after.get(k, 0) - before.get(k, 0), 1) for k in keys if k in after
    }


def _action(action: Any) -> str:
    if not isinstance(action, dict):
        return "?"
    how = [k for k in ("type", "kind") if action.get(k)]
    what = "edits" if "edits" in action else "content" if "content" in action else "?"
    return f"{action.get('file') or action.get('path') or '?'}:{what}" + "".join(
        f"[{action[k]}]" for k in how
    )


def repair_row(r: RepairResult, *, server: dict[str, float], wall: float) -> dict[str, Any]:
    attempts = r.attempts()
    outcomes = Counter(a.get("outcome", "?") for a in attempts)
    llm = r.llm
    return {
        "name": r.name,
        "breaks": len(r.breaks),
        "failing_before": len(r.failing_before),
        "check_exit": r.check_exit,
        "repair_exit": r.repair_exit,
        "fixed": r.fixed,
        "own_fix_kept": r.kept,
        "green": r.green,
        "only_kb": r.only_kb,
        "changed": r.changed,
        "still_failing_after": sorted(i for i, s in r.after.items() if s != "passed"),
        "calls": llm.get("calls"),
        "requests": llm.get("requests"),
        "tokens": (llm.get("prompt_tokens") or 0) + (llm.get("completion_tokens") or 0),
        "parse": [llm.get("parse_ok"), llm.get("parse_repaired"), llm.get("parse_failed")],
        "seconds": round(r.seconds, 1),
        "wall": round(wall, 1),
        "server": server,
        "proposed": sum(1 for a in attempts if a.get("plan")),
        "refused": outcomes.get("refused", 0),
        "kept": outcomes.get("accepted", 0),
        "outcomes": dict(outcomes),
        "stopped": r.outcome.get("stopped"),
        "attempts": [
            {
                "case": c.get("id"),
                "n": a.get("n"),
                "outcome": a.get("outcome"),
                "reason": (a.get("reason") or "")[:600],
                "actions": [_action(x) for x in ((a.get("plan") or {}).get("actions") or [])],
                "diff": (a.get("diff") or "")[:1500],
            }
            for c in r.outcome.get("cases", [])
            for a in c.get("attempts", [])
        ]
        + [
            {
                "case": "critique",
                "n": a.get("n"),
                "outcome": a.get("outcome"),
                "reason": (a.get("reason") or "")[:600],
                "actions": [_action(x) for x in ((a.get("plan") or {}).get("actions") or [])],
                "diff": "",
            }
            for a in r.outcome.get("critique", [])
        ],
        "kb_diff": (r.outcome.get("kb_diff") or "")[:3000],
        "error": r.error,
    }


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def repair_line(row: dict[str, Any]) -> str:
    return (
        f"repair {row['name']}: fixed={row['fixed']} green={row['green']} calls={row['calls']} "
        f"outcomes={row['outcomes']} {row['seconds']} s"
    )


def repair_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| regression | cases broken | fixed | suite green | only KB | plans proposed / refused / kept | "
        "other outcomes | LLM calls | tokens | seconds |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        other = (
            ", ".join(f"{k} {v}" for k, v in r["outcomes"].items() if k not in ("refused", "accepted")) or "-"
        )
        lines.append(
            f"| `{r['name']}` | {r['breaks']} | {_yes(r['fixed'])} | {_yes(r['green'])} | "
            f"{_yes(r['only_kb'])} | {r['proposed']} / {r['refused']} / {r['kept']} | {other} | "
            f"{r['calls']} | {r['tokens']:,} | {r['seconds']:.0f} |"
        )
    fixed = sum(1 for r in rows if r["fixed"] and r["green"] and (r["calls"] or 0) <= 12)
    lines.append(f"\nFixed with the suite green within 12 LLM calls: **{fixed} of {len(rows)}**.")
    reasons = Counter(_short(a["reason"]) for r in rows for a in r["attempts"] if a["outcome"] == "refused")
    if reasons:
        lines.append(
            "\nRefusal reasons (count):\n" + "\n".join(f"- {n} x {why}" for why, n in reasons.most_common(8))
        )
    return "\n".join(lines)


def pr_row(flow: dict[str, Any]) -> dict[str, Any]:
    """One planted regression's repair pull request (benchmarks/llm/prflow.py) and the reference agent's judgement
    of its branch: restored (every case it broke passes), kept (the change's own fixes still pass), clean
    (nothing else fails that passes on the shipped KB)."""
    name = flow["name"]
    manifest = regression_manifest(name)
    after: dict[str, str] = flow.get("judge") or {}
    skip = known_failing() - set(manifest["fixes"])
    return {
        "name": name,
        "kind": KINDS.get(name, "?"),
        "breaks": len(manifest["breaks"]),
        "regressed": len(flow.get("regressed") or []),
        "opened": bool(flow.get("opened")),
        "action": flow.get("action"),
        "files": list(flow.get("files") or []),
        "rates": flow.get("pass_rates") or {},
        "fixed_by": flow.get("fixed_by") or "none",
        "restored": bool(after) and all(after.get(i) == "passed" for i in manifest["breaks"]),
        "kept": bool(after) and all(after.get(i) == "passed" for i in manifest["fixes"]),
        "clean": bool(after) and all(s == "passed" for i, s in after.items() if i not in skip),
        "fixes": manifest["fixes"],
        "llm_calls": (flow.get("llm") or {}).get("calls", 0),
        "revert": flow.get("revert"),
        "note": flow.get("note", ""),
        "seconds": flow.get("seconds", 0),
        "error": flow.get("error", ""),
    }


def _pct(rate: Any) -> str:
    return f"{rate:.1%}" if isinstance(rate, int | float) else "-"


def pr_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| regression | kind | cases broken | repair PR | files it changes | pass rate base → head → repaired "
        "| fixed-by | branch judged: broken cases pass / own fix kept / nothing else fails | LLM calls | seconds |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        rates = r["rates"]
        judged = (
            f"{_yes(r['restored'])} / {_yes(r['kept']) if r['fixes'] else '-'} / {_yes(r['clean'])}"
            if r["opened"]
            else "-"
        )
        files = ", ".join(f"`{f}`" for f in r["files"]) or "-"
        lines.append(
            f"| `{r['name']}` | {r['kind']} | {r['breaks']} | {'yes' if r['opened'] else '**no**'} | {files} | "
            f"{_pct(rates.get('base'))} → {_pct(rates.get('head'))} → {_pct(rates.get('repaired'))} | "
            f"{r['fixed_by']} | {judged} | {r['llm_calls']} | {r['seconds']:.0f} |"
        )
    opened = [r for r in rows if r["opened"]]
    good = sum(1 for r in opened if r["restored"] and r["kept"] and r["clean"])
    lines.append(
        f"\nRepair PRs opened: **{len(opened)} of {len(rows)}**; their branch restores every broken case, keeps "
        f"the change's own fix and breaks nothing: **{good}**. By fixed-by: "
        + ", ".join(f"{k} {v}" for k, v in sorted(Counter(r["fixed_by"] for r in rows).items()))
        + "."
    )
    whys = [
        f"- `{r['name']}`: {r['note'] or r['error']}"
        + (f"; the partial revert: {r['revert']['reason']}" if (r.get("revert") or {}).get("reason") else "")
        for r in rows
        if not r["opened"]
    ]
    if whys:
        lines.append("\nNo repair PR:\n" + "\n".join(whys))
    return "\n".join(lines)


def pr_line(row: dict[str, Any]) -> str:
    return (
        f"repair PR {row['name']}: opened={row['opened']} fixed_by={row['fixed_by']} files={row['files']} "
        f"restored={row['restored']} kept={row['kept']} clean={row['clean']} {row['seconds']} s"
    )


def _short(reason: str) -> str:
    return " ".join(reason.split())[:220]


def agent_table(a: dict[str, Any]) -> str:
    ref, llm, n = a["reference"], a["llm"], len(a["ids"])
    by_cat: dict[str, list[int]] = {}
    for c in a["cases"]:
        by_cat.setdefault(c.get("category") or "?", [0, 0])
        by_cat[c.get("category") or "?"][0] += c["status"] == "passed"
        by_cat[c.get("category") or "?"][1] += 1
    lines = [
        "| agent | cases | passed | pass rate | seconds |",
        "|---|---|---|---|---|",
        f"| reference (whole suite) | {ref.get('total')} | {ref.get('passed')} | {_rate(ref)} | "
        f"{a['reference_seconds']:.0f} |",
        f"| reference (the subset) | {n} | {a['reference_on_subset']} | {a['reference_on_subset'] / max(n, 1):.1%} | - |",
        f"| llm agent (the subset) | {llm.get('total')} | "
        f"{llm.get('passed')} | {_rate(llm)} | {a['llm_seconds']:.0f} |",
        "\nllm agent by category: " + ", ".join(f"{k} {p}/{t}" for k, (p, t) in sorted(by_cat.items())),
        f"\nllm agent statuses: {dict(Counter(c['status'] for c in a['cases']))}; server: {a['server']}; "
        f"run meta: {a['llm_meta']}",
    ]
    return "\n".join(lines)


def _rate(summary: dict[str, Any]) -> str:
    total = summary.get("total") or 0
    return f"{(summary.get('passed') or 0) / total:.1%}" if total else "-"


def repeat_table(rep: dict[str, Any]) -> str:
    lines = [
        "| case (--repeat 3, temperature 0.7) | status | attempts passed | distinct SQL |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{c['id']}` | {c['status']} | {c['passed']}/{c['attempts']} | {c['distinct_sql']} |"
        for c in rep["cases"]
    ]
    lines.append(f"\nserver: {rep['server']}; run meta: {rep['meta']}; {rep['seconds']:.0f} s")
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    parts = [
        f"Date: {results['date']}. Model: `{results['model']}`. Product: {results['product']}. "
        f"Total {results.get('seconds', 0) / 60:.0f} min."
    ]
    if "agent" in results:
        parts.append("### (a) The llm agent beside the reference agent\n\n" + agent_table(results["agent"]))
    if "repeat" in results:
        parts.append("### (c) --repeat 3 at temperature 0.7\n\n" + repeat_table(results["repeat"]))
    if "repair" in results:
        parts.append(
            "### (b) The repair loop on the planted regressions\n\n" + repair_table(results["repair"])
        )
    if "pr" in results:
        parts.append(
            f"### (d) The repair pull request, as the Action makes it ({results.get('pr_mode', '')})\n\n"
            + pr_table(results["pr"])
        )
    return "\n\n".join(parts) + "\n"
