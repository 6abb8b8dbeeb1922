"""The Action's context: its inputs, the runner's variables and the event, read once by `sqlcanary action`'s
`main()` and passed to everything that publishes."""

from __future__ import annotations

from dataclasses import dataclass

from bot.github.event import EventContext
from bot.github.inputs import ActionInputs, Mode, RunnerContext


@dataclass(frozen=True)
class ActionContext:
    """Everything `action` needs besides the GitHub client: the inputs, the runner's variables, the event."""

    inputs: ActionInputs
    runner: RunnerContext
    event: EventContext
    mode: Mode

    @property
    def trusted(self) -> bool:
        return not self.event.untrusted

    @property
    def key(self) -> str:
        """The sticky comment's and check run's identity: one per workflow, job, suite, shard and `comment-key`
        (matrix legs that differ in something else, e.g. the model, would otherwise share one comment)."""
        parts = [
            self.runner.workflow,
            self.runner.job,
            self.inputs.suite or self.inputs.config or "",
            self.inputs.shard,
            self.inputs.comment_key,
        ]
        return "/".join(p for p in parts if p)
