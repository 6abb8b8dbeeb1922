"""Content-addressed on-disk cache of LLM replies: one JSON file per request hash, written atomically.

The key is sha256 over (base_url, model, messages, schema, temperature, max_tokens, kind): never the API key.
At a temperature above 0 the caller adds the attempt (`--repeat K` asks K times and must get K samples, not one
reply replayed K times); at 0 the attempt is left out, so repeats are served from the cache.
A file holds the reply text and its token usage, nothing else."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def default_cache_root() -> Path:
    from bot.base.settings import default_cache_dir

    return default_cache_dir() / "llm"


def request_key(
    *,
    base_url: str | None,
    model: str,
    messages: list[dict[str, Any]],
    schema: dict[str, Any] | None,
    temperature: float,
    max_tokens: int | None,
    kind: str,
    attempt: int | None = None,
) -> str:
    doc: dict[str, Any] = {
        "base_url": base_url or "",
        "model": model,
        "messages": messages,
        "schema": schema,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "kind": kind,
    }
    if attempt is not None:
        doc["attempt"] = attempt  # only when given: keys made before attempts existed stay valid
    blob = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


class ReplyCache:
    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_root()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedReply | None:
        try:
            doc = json.loads(self._path(key).read_text(encoding="utf-8"))
            return CachedReply(str(doc["text"]), int(doc["prompt_tokens"]), int(doc["completion_tokens"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or damaged: ask again

    def put(self, key: str, reply: CachedReply) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {
                "text": reply.text,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
            }
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass  # a cache that cannot be written only costs a repeated call
