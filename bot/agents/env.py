"""The environment an agent's process gets: an allow list, never the parent's environment.

In a pull request the agent is the PR's own code, so it is hostile until proven otherwise. It gets what a
program needs to start and to find its interpreter and libraries (PATH, HOME, locale, temp folders, the
virtualenv), and nothing that authorises anything: no GITHUB_TOKEN, no INPUT_* (the Action's inputs hold the
tokens and the LLM key), no ACTIONS_* (the runner's cache and OIDC credentials), no LLM key, no DATABASE_URL,
no proxy settings (they may carry credentials). A variable the agent needs is named in the config's `agent.env`
(`allow`): naming it is the user's decision, and it wins over every rule here.

PYTHONPATH and VIRTUAL_ENV pass: they say where code lives, not what it may do, and a Python agent started
from the project's virtualenv needs them. `python:` agents run inside sqlcanary's own process, so this function
cannot protect them by itself: their isolation is the per-tree child process `sqlcanary check` starts, which
gets the same allow-listed environment (plus only what sqlcanary itself needs to run the suite)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from bot.secrets import is_secret_name

BASE_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "SHELL", "TERM",
        "PYTHONPATH", "VIRTUAL_ENV",
        "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT",  # Windows: a process cannot start without them
    }
)  # fmt: skip
BASE_PREFIXES = ("LC_",)


def is_base_name(name: str) -> bool:
    """On the base list, and not secret-looking (`LC_API_KEY` is not a locale setting)."""
    key = name.upper() if os.name == "nt" else name  # Windows names ignore case
    return (key in BASE_NAMES or key.startswith(BASE_PREFIXES)) and not is_secret_name(name)


def agent_environment(environ: Mapping[str, str], *, allow: Iterable[str] = ()) -> dict[str, str]:
    """The variables of `environ` an agent may see: the base allow list plus the names in `allow` (exact names,
    as the config's `agent.env` lists them). A name in `allow` that `environ` lacks is simply absent."""
    named = set(allow)
    return {k: v for k, v in environ.items() if k in named or is_base_name(k)}
