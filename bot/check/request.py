"""`sqlcanary check`'s typed request: the run both trees share, the two commits, and how to judge the change."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.run.request import RunRequest


@dataclass(frozen=True)
class CheckRequest:
    """`sqlcanary check`: the run both trees share, the two commits, and how to judge the change."""

    run: RunRequest
    base: str | None = None  # a ref; None: origin/<base branch>, origin/main, main
    head: str | None = None  # a ref; None: the working tree as it is
    out_dir: str | None = None
    force: bool = False
    no_base_cache: bool = False
    gate: Mapping[str, Any] = field(
        default_factory=dict
    )  # the gate flags the user gave (they win over config)
    # Without a base config (the first pull request), use the head's config as it is. The Action says False: a
    # pull request's config then never routes data or secrets (bot.config.trusted.head_config_alone).
    trust_head_config: bool = True
    # Which of the pull request's KB changes broke each regressed case (delta debugging, bot.attribution.causal), and the
    # verified partial revert: the agent is asked again for the regressed cases, at most this many times (0: off).
    attribute_calls: int = 0
    write_comment: bool = True  # comment.md beside the runs (the Action renders it once, when it publishes)

    @classmethod
    def from_args(cls, args: argparse.Namespace, *, gate_flags: tuple[str, ...]) -> CheckRequest:
        return cls(
            run=RunRequest.from_args(argparse.Namespace(**{**vars(args), "out": None, "shard": None})),
            base=args.base,
            head=args.head,
            out_dir=args.out,
            force=args.force,
            no_base_cache=args.no_base_cache,
            gate={k: getattr(args, k) for k in gate_flags if getattr(args, k, None) is not None},
            attribute_calls=args.attribute_calls or 0,
        )
