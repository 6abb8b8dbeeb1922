"""`--agent llm[:CONFIG]`: the built-in agent. One LLM call per case (cached like every call): the schema of
the case's database, the KB files the config names (`kb.paths`) and the question; JSON back with `sql` or a
`clarification`.

Where things come from (the runner passes nothing special; AgentContext.options can say more):
- the config: the argument (`llm:path/to/sqlcanary.yml`), else `options["config"]`, else sqlcanary.yml in the
  context's base_dir; its `llm:` section and `kb.paths` are used (`options["llm"]` overrides the section);
- the schema, per case database: `options["schema"]` (text, or {db: text}), else `options["schema_file"]`
  (a path, or {db: path}), else `options["dsn"]` (a DSN, or {db: DSN}: read live, with COMMENTs), else the
  DDL and COMMENT statements of the fixtures of the config's `suite:`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.agents.base import AgentContext, Answer, scrub_answer
from bot.cases.model import Case
from bot.config import CONFIG_NAMES, Config, load_config
from bot.errors import AgentError, SqlcanaryError
from bot.llm import BudgetExhausted, LLMBadOutput, LLMError, LLMSettings

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"sql": {"type": ["string", "null"]}, "clarification": {"type": ["string", "null"]}},
    "required": ["sql"],
}
MAX_KB_CHARS = 200_000  # all KB files together; the rest is left out (and not listed in `used`)


@dataclass(frozen=True)
class KbFile:
    path: str  # relative to the config's folder, posix ("kb/metrics/dau.yaml")
    text: str


def _find_config(arg: str, ctx: AgentContext) -> Config:
    named = arg or ctx.options.get("config")
    if named:
        p = Path(named)
        p = p if p.is_absolute() else Path(ctx.base_dir) / p
        if p.is_dir():
            p = next((p / n for n in CONFIG_NAMES if (p / n).is_file()), p / CONFIG_NAMES[0])
        if not p.is_file():
            raise AgentError(f"llm agent: no config file {p}")
        return load_config(p)
    for name in CONFIG_NAMES:
        if (Path(ctx.base_dir) / name).is_file():
            return load_config(Path(ctx.base_dir) / name)
    return Config(base_dir=str(Path(ctx.base_dir).resolve()))


def read_kb_files(config: Config, *, limit: int = MAX_KB_CHARS) -> list[KbFile]:
    """Files matched by `kb.paths` under the config's folder (symlinks out of it are skipped), sorted."""
    base = Path(config.base_dir).resolve()
    found: dict[str, Path] = {}
    for pattern in config.kb.paths:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            continue
        for p in base.glob(pattern):
            real = p.resolve()
            if p.is_file() and real.is_relative_to(base):
                found[p.relative_to(base).as_posix()] = real
    out: list[KbFile] = []
    total = 0
    for rel in sorted(found):
        try:
            text = found[rel].read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if total + len(text) > limit:
            break
        total += len(text)
        out.append(KbFile(rel, text))
    return out


def _per_db(value: Any, db: str) -> Any:
    return value.get(db) if isinstance(value, dict) else value


def _client(settings: LLMSettings, ctx: AgentContext):
    from bot.llm.cache import ReplyCache
    from bot.llm.client import LLMClient

    if ctx.settings is None:  # no process settings given: no key from anywhere (a local server needs none)
        return LLMClient(settings, environ={})
    return LLMClient(settings, environ=ctx.settings.environ, cache=ReplyCache(ctx.settings.cache_dir / "llm"))


class LLMAgent:
    def __init__(self, arg: str, ctx: AgentContext) -> None:
        self.ctx = ctx
        self.config = _find_config(arg, ctx)
        settings = self.config.llm
        if ctx.options.get("llm"):
            settings = LLMSettings(**{**settings.model_dump(), **ctx.options["llm"]})
        self.kb_files = read_kb_files(self.config)
        try:
            self.client = _client(settings, ctx)
        except LLMError as exc:
            raise AgentError(f"llm agent: {exc}") from exc
        self.name = f"llm:{self.client.settings.model}"
        self._schemas: dict[str, str] = {}
        self._lock = threading.Lock()

    # ---- schema ----------------------------------------------------------------------------------------------
    def schema_for(self, db: str) -> str:
        with self._lock:
            if db not in self._schemas:
                self._schemas[db] = self._load_schema(db)
            return self._schemas[db]

    def _load_schema(self, db: str) -> str:
        from bot.agents.schema import describe_fixture, describe_live

        opts = self.ctx.options
        if (text := _per_db(opts.get("schema"), db)) is not None:
            return str(text)
        if (path := _per_db(opts.get("schema_file"), db)) is not None:
            p = Path(path) if Path(path).is_absolute() else Path(self.ctx.base_dir) / path
            return p.read_text(encoding="utf-8")
        if (dsn := _per_db(opts.get("dsn"), db)) is not None:
            return describe_live(dsn)
        if self.config.suite:
            from bot.cases.loader import load_suite

            try:
                suite = load_suite(self.config.path(self.config.suite))
            except SqlcanaryError:
                return ""
            return describe_fixture(suite.databases.get(db, ()))
        return ""

    # ---- prompt and answer -----------------------------------------------------------------------------------
    def messages(self, case: Case) -> list[dict[str, str]]:
        from bot.templating import environment

        env = environment()
        system = env.get_template("prompts/agent_system.md.j2").render()
        user = env.get_template("prompts/agent.md.j2").render(
            db=case.db, schema=self.schema_for(case.db).strip(), kb_files=self.kb_files,
            question=case.question, instructions=case.instructions or "",
        )  # fmt: skip
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def answer(self, case: Case) -> Answer:
        """Masked like every adapter's: an LLM error may quote the request, key included."""
        return scrub_answer(self._answer(case), self.ctx.secrets)

    def _answer(self, case: Case) -> Answer:
        started = time.perf_counter()
        used = tuple(f.path for f in self.kb_files)
        try:
            reply = self.client.complete_json(
                self.messages(case), schema=ANSWER_SCHEMA, required=("sql",), purpose=f"case {case.id}"
            )
        except LLMBadOutput as exc:
            return Answer(
                error=str(exc), error_class="agent_bad_output", duration_s=time.perf_counter() - started
            )
        except (BudgetExhausted, LLMError) as exc:
            return Answer(
                error=str(exc), error_class="agent_crashed", duration_s=time.perf_counter() - started
            )
        took = time.perf_counter() - started
        sql, clarification = reply.data.get("sql"), reply.data.get("clarification")
        if isinstance(sql, str) and sql.strip():
            return Answer(sql=sql, used=used, duration_s=took)
        if isinstance(clarification, str) and clarification.strip():
            return Answer(error=f"the agent asked for a clarification: {clarification[:500]}",
                          error_class="agent_declined", used=used, duration_s=took)  # fmt: skip
        return Answer(error="the LLM returned neither sql nor a clarification", error_class="agent_empty",
                      used=used, duration_s=took)  # fmt: skip

    def close(self) -> None:
        pass
