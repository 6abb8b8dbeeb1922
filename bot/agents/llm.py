"""`--agent llm[:CONFIG]`: the built-in agent. One LLM call per case (cached like every call): the schema of
the case's database, the KB files the config names (`kb.paths`), the question and what its category asks for
(a read-only query, a write or DDL statement, a cheaper query); JSON back with `sql` or a `clarification`.

Its time is bounded by the `llm:` settings (`timeout_s`, `first_timeout_s`, `max_retries`), not by
`agent.timeout`, which bounds process agents. With `--repeat K` at a temperature above 0 each attempt is its own
request (the attempt is part of the reply cache's key); at temperature 0 the repeats come from the cache.
A prompt longer than the model's context is sent again without the KB files least related to the case
(bot.agents.llmkb); when even the question alone does not fit, the case errors with the limit named.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.agents.base import AgentContext, Answer, current_attempt, scrub_answer
from bot.agents.llmkb import KbFile, fit, kb_chars, read_kb_files
from bot.base.errors import AgentError, SqlcanaryError
from bot.base.results import LLMUsage
from bot.base.usage import AnswerUsage
from bot.cases.model import Case
from bot.config.model import CONFIG_NAMES, Config, load_config
from bot.llm import BudgetExhausted, LLMBadOutput, LLMContextTooLong, LLMError, LLMSettings
from bot.llm.usage import usage_record

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"sql": {"type": ["string", "null"]}, "clarification": {"type": ["string", "null"]}},
    "required": ["sql"],
}


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
        self._kb_budget: int | None = None  # KB characters known to fit the model's context, once one did not
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
        if self.ctx.suite is not None:  # the run's suite, as read once (a check's head: by its reader)
            return describe_fixture(self.ctx.suite.fixtures(db)) if db in self.ctx.suite.databases else ""
        if self.config.suite:  # the agent asked on its own (`sqlcanary llm`, a test): the config's suite
            from bot.cases.loader import load_suite

            try:
                suite = load_suite(self.config.path(self.config.suite))
            except SqlcanaryError:
                return ""
            return describe_fixture(suite.fixtures(db)) if db in suite.databases else ""
        return ""

    # ---- prompt and answer -----------------------------------------------------------------------------------
    def messages(self, case: Case, kb_files: Sequence[KbFile] | None = None) -> list[dict[str, str]]:
        """The system prompt is the same for every case and the case comes last (question, category, what to
        write): the longest possible prefix is shared, which a local server reads once."""
        from bot.base.templating import environment

        env = environment()
        system = env.get_template("prompts/agent_system.md.j2").render()
        user = env.get_template("prompts/agent.md.j2").render(
            db=case.db,
            schema=self.schema_for(case.db).strip(),
            kb_files=self.kb_files if kb_files is None else kb_files,
            question=case.question,
            instructions=case.instructions or "",
            category=case.category,
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def answer(self, case: Case) -> Answer:
        """Masked like every adapter's: an LLM error may quote the request, key included."""
        return scrub_answer(self._answer(case), self.ctx.secrets)

    def _answer(self, case: Case) -> Answer:
        started = time.perf_counter()
        try:
            reply, files = self._ask(case)
        except LLMContextTooLong as exc:
            return Answer(
                error=f"{exc.message}; even without any KB file",
                error_class="agent_context_too_long",
                duration_s=time.perf_counter() - started,
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
        used = tuple(f.path for f in files)
        u = reply.usage  # of this reply: what asking it cost (a cached reply: when it was asked)
        usage = AnswerUsage(
            model=self.client.settings.model[:200] or None,
            llm_calls=max(u.calls, 1),
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            cost_usd=u.cost_usd,
        )
        sql, clarification = reply.data.get("sql"), reply.data.get("clarification")
        if isinstance(sql, str) and sql.strip():
            return Answer(sql=sql, used=used, duration_s=took, usage=usage)
        if isinstance(clarification, str) and clarification.strip():
            return Answer(
                error=f"the agent asked for a clarification: {clarification[:500]}",
                error_class="agent_declined",
                used=used,
                duration_s=took,
                usage=usage,
            )
        return Answer(
            error="the LLM returned neither sql nor a clarification",
            error_class="agent_empty",
            used=used,
            duration_s=took,
            usage=usage,
        )

    def _ask(self, case: Case):
        """(reply, the KB files its prompt held). On a context-length error, again with the files least related
        to the case dropped until the prompt fits; the smaller KB is remembered for the cases after it."""
        question = f"{case.question}\n{case.instructions or ''}"
        files = list(self.kb_files)
        with self._lock:
            budget = self._kb_budget
        if budget is not None and kb_chars(files) > budget:
            files = fit(files, question, max_chars=budget)
        while True:
            messages = self.messages(case, files)
            try:
                reply = self.client.complete_json(
                    messages,
                    schema=ANSWER_SCHEMA,
                    required=("sql",),
                    purpose=f"case {case.id}",
                    attempt=current_attempt.get(),
                )
                return reply, files
            except LLMContextTooLong as exc:
                if not files:
                    raise
                budget = self._smaller_kb(files, messages, exc)
                smaller = fit(files, question, max_chars=budget)
                files = smaller if len(smaller) < len(files) else []

    def _smaller_kb(
        self, files: Sequence[KbFile], messages: list[dict[str, str]], exc: LLMContextTooLong
    ) -> int:
        """KB characters that should fit: the excess the server reported (with room for the reply), else half."""
        have = kb_chars(files)
        prompt_chars = sum(len(m["content"]) for m in messages)
        budget = have // 2
        if exc.limit and exc.prompt_tokens:
            per_token = prompt_chars / exc.prompt_tokens
            reply_room = min(self.client.settings.max_tokens or 0, exc.limit // 4)
            excess = (exc.prompt_tokens - (exc.limit - reply_room)) * per_token * 1.1
            budget = min(have - 1, int(have - excess)) if excess > 0 else budget
        budget = max(0, budget)
        with self._lock:
            self._kb_budget = budget if self._kb_budget is None else min(self._kb_budget, budget)
        return budget

    def llm_usage(self) -> LLMUsage:
        """The run's LLM usage for RunMeta.llm and the summary line."""
        return usage_record(self.client)

    def close(self) -> None:
        pass
