"""Two caches under the cache folder (`Settings.cache_dir`): answers (content-addressed by answer key) and base runs (`sqlcanary check`).

Both are plain JSON files written atomically; a file that cannot be read is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.agents.base import AgentAdapter, Answer, current_attempt, reply_usage
from bot.base.results import RunResult, read_run, write_json_atomic, write_run
from bot.cases.model import Case
from bot.run.fingerprint import answer_key

ANSWER_CACHE_VERSION = 1


def cacheable(answer: Answer) -> bool:
    """Only clean answers are kept: SQL without an error, or an agent that declined on purpose.
    Timeouts, crashes and garbage output may not happen next time."""
    if answer.alternatives:
        return False
    if answer.error is None:
        return answer.sql is not None
    return answer.error_class == "agent_declined" and answer.sql is None


class AnswerCache:
    """`<root>/answers/<key[:2]>/<key>.json` holding {sql, used, error, error_class, usage}: the usage is what
    the answer cost when it was asked (an answer from the cache costs nothing again, and says it was cached)."""

    def __init__(self, root: Path) -> None:
        self.root = root / "answers"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Answer | None:
        try:
            raw = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict) or raw.get("v") != ANSWER_CACHE_VERSION:
            return None
        used = raw.get("used") or []
        try:
            usage = reply_usage(raw.get("usage"))
        except ValueError:
            usage = None  # a cache: what it cannot vouch for is left out
        answer = Answer(
            sql=raw.get("sql"),
            error=raw.get("error"),
            error_class=raw.get("error_class"),
            used=tuple(str(u) for u in used) if isinstance(used, list) else (),
            usage=usage,
            cached=True,
        )
        return answer if cacheable(answer) else None

    def put(self, key: str, answer: Answer) -> None:
        if not cacheable(answer):
            return
        record = {
            "v": ANSWER_CACHE_VERSION,
            "sql": answer.sql,
            "used": list(answer.used),
            "error": answer.error,
            "error_class": answer.error_class,
            "usage": answer.usage.model_dump(exclude_none=True) if answer.usage else None,
        }
        try:
            write_json_atomic(self._path(key), json.dumps(record) + "\n")
        except OSError:
            pass  # a read-only or full cache must not fail the run


@dataclass
class AnswerSource:
    """Asks the agent for attempt `k` of a case, or takes the answer from the cache; counts both."""

    agent: AgentAdapter
    fingerprint: str = ""
    cache: AnswerCache | None = None
    calls: int = 0
    hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def key(self, case: Case, attempt: int) -> str | None:
        return answer_key(self.fingerprint, case, attempt) if self.fingerprint else None

    def answer(self, case: Case, attempt: int) -> tuple[Answer, str | None]:
        key = self.key(case, attempt)
        if self.cache is not None and key:
            cached = self.cache.get(key)
            if cached is not None:
                with self._lock:
                    self.hits += 1
                return cached, key
        token = current_attempt.set(attempt)
        try:
            answer = self.agent.answer(case)
        finally:
            current_attempt.reset(token)
        with self._lock:
            self.calls += 1
        if self.cache is not None and key:
            self.cache.put(key, answer)
        return answer, key


def run_cache_key(parts: dict[str, Any]) -> str:
    """The base-run cache key: a hash of everything that decides a run's result (see `sqlcanary check`)."""
    text = json.dumps({"v": 1, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class RunCache:
    """`<root>/runs/<key>.json`: saved RunResults of base commits."""

    def __init__(self, root: Path) -> None:
        self.root = root / "runs"

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> RunResult | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            return read_run(path)
        except Exception:  # noqa: BLE001 - a stale or corrupt entry is a miss
            return None

    def put(self, key: str, run: RunResult) -> None:
        try:
            write_run(self.path(key), run)
        except OSError:
            pass
