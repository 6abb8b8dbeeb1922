"""Attribution (bot.attribution.causal.find_causes) in a child process of its own, as each side's run is
(bot.check.child): the check's process, which holds the GitHub token and the LLM key, never starts the head's
agent nor parses the head's reverted copies of the KB.

The child gets the environment `child_environment` builds for the head (the allow-list, the variables the base's
config names for the agent, sqlcanary's settings, the database) and its request from a file only this user can
read, written by this process before the child starts and read by the child before any agent runs. It writes
its findings as JSON, which this process reads back as data: size-bounded, validated, and masked of this
process's secrets (bot.base.resultfiles)."""

from __future__ import annotations

import os
import pickle
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from bot.attribution.causal import CausalFindings, CauseRequest, find_causes
from bot.attribution.delta import Attribution
from bot.attribution.hunks import Change, ChangeSet
from bot.attribution.revert import RevertCandidate
from bot.base.errors import EXIT_BUG, EXIT_INTERRUPTED, EXIT_OK, ConfigError, error_boundary
from bot.base.resultfiles import ResultFiles
from bot.base.results import FrozenModel, write_json_atomic
from bot.base.selfchild import self_argv, wait_child
from bot.base.settings import Settings
from bot.check.child import child_environment
from bot.check.trees import Tree
from bot.db.provision import Server

MAX_FINDINGS_BYTES = 64 * 1024 * 1024  # the KB texts of both sides and the revert's: far above any real KB
_REQUEST, _FINDINGS = "request.pickle", "findings.json"


class Findings(FrozenModel):
    """CausalFindings as the child writes them and this process validates them."""

    changes: tuple[Change, ...]
    base: dict[str, str | None]
    head: dict[str, str | None]
    skipped: tuple[str, ...] = ()
    attribution: Attribution
    revert: RevertCandidate
    agent_calls: int
    sandbox: str | None

    @classmethod
    def of(cls, found: CausalFindings) -> Findings:
        c = found.changes
        return cls(
            changes=c.changes,
            base=dict(c.base),
            head=dict(c.head),
            skipped=c.skipped,
            attribution=found.attribution,
            revert=found.revert,
            agent_calls=found.agent_calls,
            sandbox=found.sandbox,
        )

    def causal(self) -> CausalFindings:
        changes = ChangeSet(changes=self.changes, base=self.base, head=self.head, skipped=self.skipped)
        return CausalFindings(
            changes=changes,
            attribution=self.attribution,
            revert=self.revert,
            agent_calls=self.agent_calls,
            sandbox=self.sandbox,
        )


def find_causes_apart(req: CauseRequest, tree: Tree, server: Server, settings: Settings) -> CausalFindings:
    """`find_causes` of `req` on the head's `tree`, in a child process with the head's allow-listed environment;
    its findings read back as data."""
    env = child_environment(settings, tree, server)
    with tempfile.TemporaryDirectory(prefix="sqlcanary-causes-") as private:  # mode 0700: this user's alone
        folder = Path(private)
        # This process's own objects, for a child of this very sqlcanary: the request goes one way only, and the
        # child reads it before it starts any agent. What comes back is JSON, validated.
        (folder / _REQUEST).write_bytes(pickle.dumps((req, server)))
        argv = self_argv("bot.check.causes_child", str(folder / _REQUEST), str(folder / _FINDINGS))
        proc = subprocess.Popen(
            argv, cwd=tree.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        rc = wait_child(proc)
        if rc == EXIT_INTERRUPTED:
            raise KeyboardInterrupt
        if rc != EXIT_OK or not (folder / _FINDINGS).is_file():
            raise ConfigError(f"finding the causes of the regressions failed with exit code {rc}; see above")
        found = read_findings(folder / _FINDINGS)
        return ResultFiles(folder, settings.secrets).model(_FINDINGS, found).causal()


def read_findings(path: Path) -> Findings:
    """The child's findings, validated; a file over MAX_FINDINGS_BYTES or not valid is a bug (exit 3)."""
    with path.open("rb") as fh:
        raw = fh.read(MAX_FINDINGS_BYTES + 1)
    if len(raw) > MAX_FINDINGS_BYTES:
        raise _Unreadable(f"{path}: over {MAX_FINDINGS_BYTES} bytes")
    try:
        return Findings.model_validate_json(raw)
    except ValidationError as exc:
        raise _Unreadable(f"{path}: {exc.errors()[0]['msg']}") from exc


class _Unreadable(ConfigError):
    exit_code = EXIT_BUG


def main(argv: Sequence[str]) -> int:
    """The child: `find_causes` of the request in `argv[0]`, its findings written to `argv[1]`."""
    request, out = Path(argv[0]), Path(argv[1])
    code = [EXIT_OK]
    with error_boundary(code):
        req, server = pickle.loads(request.read_bytes())
        found = find_causes(req, server=server, settings=Settings.from_environ(os.environ))
        write_json_atomic(out, Findings.of(found).model_dump_json() + "\n")
    return code[0]
