"""The golds a pull request adds or edits, audited (bot.audit) in the head's tree, in a child of their own.

`sqlcanary audit` runs there as the head's `sqlcanary run` does (bot.check.child): the config the check decided,
the head's suite as its reader parsed it (`--suite-data`), the head's allow-listed environment, no token. What
it writes is read back as data: size-bounded, validated as an AuditReport, masked of this process's secrets. The
audit is advisory: its suspects become one note on the comment (the evidence in `audit.json` beside the runs),
never a verdict, and an audit that fails is a note too.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bot.audit.model import CONFIDENCES, HINT_KINDS, AuditReport, Suspect
from bot.base.errors import EXIT_INTERRUPTED, EXIT_OK, ConfigError
from bot.base.resultfiles import ResultFiles
from bot.base.selfchild import self_argv, wait_child
from bot.base.settings import Settings
from bot.cases.suite_doc import SuiteDoc
from bot.check.apart import read_reply
from bot.check.child import child_environment
from bot.check.sides import Side
from bot.config.trusted import write_resolved
from bot.db.provision import Server

MAX_BYTES = 16 * 1024 * 1024
FILE = "audit.json"
_SHOWN = 5  # cases named on the comment; the rest are counted


def audit_touched(
    side: Side, server: Server, ids: Sequence[str], out: Path, settings: Settings
) -> tuple[AuditReport | None, tuple[str, ...]]:
    """The audit of the cases `ids` of the head (`side`), written to `out`, and its notes for the comment."""
    out.unlink(missing_ok=True)  # never mistake an earlier check's file for this one's
    if not ids:
        return None, ()
    tree = side.tree
    with tempfile.TemporaryDirectory(prefix="sqlcanary-audit-") as private:
        argv = ["audit", "--config", str(write_resolved(tree.config, Path(private) / "head.json"))]
        argv += [side.relative_run.suite] if side.relative_run.suite else []
        # The head's suite, as its reader parsed it: the child parses no YAML of it.
        if tree.files is not None:
            data = Path(private) / "head-suite.json"
            data.write_text(SuiteDoc.of(side.suite).model_dump_json(), encoding="utf-8")
            argv += ["--suite-data", str(data)]
        for case_id in ids:
            argv += ["--id", case_id]
        argv += ["--format", "json", "--out", str(out), "-q"]
        proc = subprocess.Popen(
            self_argv("bot.cli", *argv),
            cwd=tree.cwd,
            env=child_environment(settings, tree.config, server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        rc = wait_child(proc)
    if rc == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if rc != EXIT_OK or not out.is_file():
        return None, (
            f"the audit of the {len(ids)} case(s) this change adds or edits failed (exit code {rc}; its error is "
            "printed in the log): their golds were not checked",
        )
    try:
        report = read_reply(out, AuditReport, max_bytes=MAX_BYTES)
    except ConfigError as exc:
        return None, (f"the audit of the cases this change adds or edits is unreadable: {exc.message}",)
    report = ResultFiles(out.parent, settings.secrets).model(out.name, report)
    return report, audit_notes(report)


def audit_notes(report: AuditReport) -> tuple[str, ...]:
    """One note for the comment's warnings naming the suspect golds (hints left out), each case by its
    likeliest suspect; none when nothing is suspect."""
    suspects = sorted(
        (s for s in report.suspects if s.kind not in HINT_KINDS),
        key=lambda s: CONFIDENCES.index(s.confidence),
    )
    first: dict[str, Suspect] = {}
    for s in suspects:
        first.setdefault(s.case_id, s)
    if not first:
        return ()
    named = [
        f"`{case_id}` ({s.kind.replace('_', ' ')}: {s.message})"
        for case_id, s in list(first.items())[:_SHOWN]
    ]
    more = f" and {len(first) - _SHOWN} more" if len(first) > _SHOWN else ""
    return (
        f"suspect gold{'s' if len(first) > 1 else ''} among the cases this change adds or edits (advisory): "
        f"{'; '.join(named)}{more}. The evidence is in `{FILE}`; `sqlcanary audit` audits the whole suite.",
    )
