"""A client's usage as the record a run keeps (RunMeta.llm for the llm agent, RunMeta.llm_judge for
`--llm-judge`)."""

from __future__ import annotations

from bot.base.results import LLMUsage
from bot.llm.protocol import JsonLLM


def usage_record(client: JsonLLM) -> LLMUsage:
    """Requests, cache hits, tokens, cost and parse stats of every call `client` made so far."""
    usage = client.usage
    ok, repaired, failed = client.parse_stats
    return LLMUsage(
        model=client.settings.model,
        calls=usage.calls,
        cached_calls=usage.cached_calls,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost_usd=usage.cost_usd,
        parse_ok=ok,
        parse_repaired=repaired,
        parse_failed=failed,
    )
