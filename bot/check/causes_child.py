"""Attribution (bot.attribution.causal.find_causes) in a child process of its own, as each side's run is
(bot.check.child): the check's process, which holds the GitHub token and the LLM key, never starts the head's
agent nor parses the head's reverted copies of the KB.

The child gets the environment `child_environment` builds for the head (the allow-list, the variables the base's
config names for the agent, sqlcanary's settings, the database). Its request and its findings travel as JSON
(bot.check.apart): the request validated by the child before any agent runs, the findings read back by this
process size-bounded, validated and masked of its secrets."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from bot.attribution.causal import CausalFindings, CauseRequest, find_causes
from bot.attribution.delta import Attribution
from bot.attribution.head_agent import AgentSetup
from bot.attribution.hunks import Change, ChangeSet
from bot.attribution.revert import RevertCandidate
from bot.base.results import FrozenModel
from bot.base.settings import Settings
from bot.cases.suite_doc import SuiteDoc
from bot.check.apart import run_apart, serve_apart
from bot.check.child import child_environment
from bot.check.trees import Tree
from bot.compare.diff import FileDiff
from bot.config.model import Config
from bot.db.provision import Server

MAX_FINDINGS_BYTES = 64 * 1024 * 1024  # the KB texts of both sides and the revert's: far above any real KB


class CauseJob(FrozenModel):
    """CauseRequest as data, with the server it runs against."""

    diff: tuple[FileDiff, ...]
    config: Config
    base_root: Path
    head_root: Path
    suite: SuiteDoc
    head: dict[str, str]
    regressed: tuple[str, ...]
    agent: AgentSetup | None = None
    base_pass_rate: float | None = None
    max_agent_calls: int | None = 200
    server: Server

    @classmethod
    def of(cls, req: CauseRequest, server: Server) -> CauseJob:
        if req.run_options is not None:
            raise RuntimeError("a check's attribution takes the run options of its config, never its own")
        agent = req.agent
        return cls(
            diff=tuple(req.diff),
            config=req.config,
            base_root=req.base_root,
            head_root=req.head_root,
            suite=SuiteDoc.of(req.suite),
            head=dict(req.head),
            regressed=tuple(req.regressed),
            agent=AgentSetup(**{f.name: getattr(agent, f.name) for f in fields(AgentSetup)})
            if agent
            else None,
            base_pass_rate=req.base_pass_rate,
            max_agent_calls=req.max_agent_calls,
            server=server,
        )

    def request(self) -> CauseRequest:
        fields = {k: v for k, v in dict(self).items() if k != "server"}
        return CauseRequest(**{**fields, "suite": self.suite.suite()})


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
    found = run_apart(
        "bot.check.causes_child",
        CauseJob.of(req, server),
        Findings,
        env=child_environment(settings, tree.config, server),
        cwd=tree.cwd,
        settings=settings,
        max_bytes=MAX_FINDINGS_BYTES,
        what="finding the causes of the regressions",
    )
    return found.causal()


def _work(job: CauseJob, settings: Settings) -> Findings:
    return Findings.of(find_causes(job.request(), server=job.server, settings=settings))


def main(argv: Sequence[str]) -> int:
    """The child: `find_causes` of the request in `argv[0]`, its findings written to `argv[1]`."""
    return serve_apart(argv, CauseJob, _work, os.environ)
