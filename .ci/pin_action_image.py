#!/usr/bin/env python3
"""Point action.yml at a published image by digest: `runs.image: Dockerfile` becomes
`runs.image: docker://REGISTRY/OWNER/NAME@sha256:<64 hex>`, so a job that uses the action pulls that exact image
(seconds) instead of building the Dockerfile (about 36 s cold). The release workflow (.github/workflows/release.yml)
runs it on the release commit; tests/docker/test_published_image.py runs it against a local registry.

    python .ci/pin_action_image.py IMAGE@sha256:DIGEST [--action action.yml] [--out PATH]

Only the `image:` line under `runs:` changes (comments and layout are kept); the result is read back and checked.
A reference without a sha256 digest, an action.yml that is not a docker action, or one with no or several
`image:` lines under `runs:` exits 2 naming the file or the argument.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

# registry[:port]/path/components@sha256:<64 hex> (lower case, as `docker inspect` prints a RepoDigest)
REFERENCE = re.compile(
    r"^(?P<name>[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+)"
    r"@sha256:[0-9a-f]{64}$"
)
_RUNS = re.compile(r"^runs:\s*(#.*)?$")
_IMAGE = re.compile(r"^(?P<indent>\s+)image:\s*(?P<value>.*?)\s*$")


class PinError(Exception):
    """Bad input: printed, exit 2."""


def check_reference(reference: str) -> str:
    ref = reference.strip().removeprefix("docker://")
    if not REFERENCE.match(ref):
        raise PinError(
            f"image reference {reference!r} is not NAME@sha256:<64 lower-case hex digits> "
            "(e.g. ghcr.io/owner/sqlcanary@sha256:...; a tag alone can move, a digest cannot)"
        )
    return ref


def pin(text: str, reference: str, *, path: str = "action.yml") -> str:
    """`text` (an action.yml) with its runs.image replaced by `docker://reference`."""
    ref = check_reference(reference)
    data = yaml.safe_load(text)
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict) or runs.get("using") != "docker":
        raise PinError(f"{path}: `runs.using` is not `docker`: only a docker action runs an image")
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _RUNS.match(line)), None)
    if start is None:
        raise PinError(f"{path}: no top-level `runs:` line")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].strip() and not lines[i][0].isspace()),
        len(lines),
    )
    hits = [i for i in range(start + 1, end) if _IMAGE.match(lines[i])]
    if len(hits) != 1:
        raise PinError(f"{path}: expected one `image:` line under `runs:`, found {len(hits)}")
    match = _IMAGE.match(lines[hits[0]])
    assert match is not None
    newline = "\n" if lines[hits[0]].endswith("\n") else ""
    lines[hits[0]] = f"{match['indent']}image: docker://{ref}{newline}"
    out = "".join(lines)
    if yaml.safe_load(out).get("runs", {}).get("image") != f"docker://{ref}":
        raise PinError(f"{path}: the rewritten file does not read back as runs.image = docker://{ref}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", help="the published image, NAME@sha256:DIGEST")
    parser.add_argument(
        "--action", default="action.yml", help="the action.yml to read (default ./action.yml)"
    )
    parser.add_argument("--out", help="where to write (default: rewrite --action in place)")
    args = parser.parse_args(argv)
    source = Path(args.action)
    try:
        if not source.is_file():
            raise PinError(f"{source}: no such file")
        text = pin(source.read_text(encoding="utf-8"), args.reference, path=str(source))
    except PinError as exc:
        print(f"pin_action_image: error: {exc}", file=sys.stderr)
        return 2
    except yaml.YAMLError as exc:
        print(f"pin_action_image: error: {source}: not YAML: {exc}", file=sys.stderr)
        return 2
    target = Path(args.out) if args.out else source
    target.write_text(text, encoding="utf-8")
    print(f"{target}: runs.image = docker://{check_reference(args.reference)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
