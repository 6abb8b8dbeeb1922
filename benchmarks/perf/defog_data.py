"""The public defog dataset the perf scripts time (`../shared/datasets/defog`, beside the repository; a user's
clone has none)."""

from __future__ import annotations

import sys
from pathlib import Path

SHARED = str(Path(__file__).resolve().parents[3] / "shared")  # the default of each script's --shared


def defog_source(shared: str) -> Path | None:
    """`shared`'s defog dataset, or None, said on stderr, when it is absent."""
    src = Path(shared) / "datasets/defog"
    if not src.is_dir():
        print(f"no defog dataset at {src}", file=sys.stderr)
        return None
    return src
