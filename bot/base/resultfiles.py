"""The one writer of a check's result files (the runs, the comparison, the rendered reports): each is masked of
the secrets once, here, as it is written, and what it returns is what was written, so no caller masks by hand.

A run or a comparison is masked in every string it holds (bot.base.secrets.redact_model); a rendered report in
every encoded and escaped form of a secret (bot.base.secrets.scrub_rendered). A report is rendered from the
masked models (bot.report.render masks its subject too, for the texts that go to GitHub): the templates cut long
text, and half a token is still a leak."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from bot.base.results import write_json_atomic
from bot.base.secrets import redact_model, scrub_rendered

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ResultFiles:
    """The result files in `out_dir`, each masked of `secrets` once, as it is written."""

    out_dir: Path
    secrets: Sequence[str] = ()

    def model(self, name: str, model: M) -> M:
        """Write a run or a comparison as JSON, every string it holds masked; returns the masked model."""
        masked = redact_model(model, self.secrets)
        write_json_atomic(self.out_dir / name, masked.model_dump_json(indent=2) + "\n")
        return masked

    def text(self, name: str, text: str) -> None:
        """Write a rendered report, every secret masked in any of its encoded and escaped forms."""
        masked = scrub_rendered(text, self.secrets)
        write_json_atomic(self.out_dir / name, masked)
