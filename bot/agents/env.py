"""The environment an agent's process gets: an allow list, never the parent's environment.

In a pull request the agent is the PR's own code, so it is hostile until proven otherwise. It gets what a
program needs to start and to find its interpreter and libraries (PATH, HOME, locale, temp folders, the
virtualenv), and nothing that authorises anything: no GITHUB_TOKEN, no INPUT_* (the Action's inputs hold the
tokens and the LLM key), no ACTIONS_* (the runner's cache and OIDC credentials), no LLM key, no DATABASE_URL,
no proxy settings (they may carry credentials). A variable the agent needs is named in the config's `agent.env`
(`allow`): naming it is the user's decision, and it wins over every rule here but one: credentials of the runner,
the Action, GitHub and the database (`GITHUB_*`, `ACTIONS_*`, `INPUT_*`, `RUNNER_*`, `DATABASE_URL`, `PG*`
passwords, `SQLCANARY_*`) can never be named.

PYTHONPATH and VIRTUAL_ENV pass: they say where code lives, not what it may do, and a Python agent started
from the project's virtualenv needs them. As root, every agent process (a `python:` agent's host too) runs as
the sandbox's user with this environment (bot.agents.sandbox). Not root, `python:` agents run inside sqlcanary's
own process, so this function cannot protect them by itself: their isolation is then the per-tree child process
`sqlcanary check` starts, which gets the same allow-listed environment (plus what sqlcanary needs to run)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.base.childenv import on_allow_list
from bot.base.errors import ConfigError

# What an agent's programs use besides bot.base.childenv's allow-list (what every child of sqlcanary gets).
AGENT_NAMES = frozenset({"SHELL", "TERM", "PYTHONPATH", "VIRTUAL_ENV"})
# Never passed, whoever names them in `agent.env`: the runner's and the Action's credentials and files, the
# database's superuser and passwords, sqlcanary's own settings.
FORBIDDEN_PREFIXES = ("GITHUB_", "ACTIONS_", "INPUT_", "RUNNER_", "SQLCANARY_")
FORBIDDEN_NAMES = frozenset({"DATABASE_URL", "PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE", "GITHUB_TOKEN"})


def forbidden_reason(name: str) -> str | None:
    """Why `agent.env` may not pass `name`, or None when it may."""
    key = name.upper()
    if key in FORBIDDEN_NAMES:
        return "it holds a database or GitHub credential"
    prefix = next((p for p in FORBIDDEN_PREFIXES if key.startswith(p)), None)
    if prefix is not None:
        return f"`{prefix}*` variables belong to the runner, the Action or sqlcanary"
    return None


def check_allow(names: Iterable[str]) -> None:
    """Refuse (ConfigError, exit 2) a name `agent.env` can never pass, naming it and why."""
    for name in names:
        reason = forbidden_reason(name)
        if reason:
            raise ConfigError(f"agent.env: {name!r} can never be passed to the agent: {reason}; remove it")


def is_base_name(name: str) -> bool:
    """On the base list (bot.base.childenv's, plus AGENT_NAMES), and not secret-looking."""
    return on_allow_list(name, names=AGENT_NAMES)


def agent_environment(environ: Mapping[str, str], *, allow: Iterable[str] = ()) -> dict[str, str]:
    """The variables of `environ` an agent may see: the base allow list plus the names in `allow` (exact names,
    as the config's `agent.env` lists them). A name in `allow` that `environ` lacks is simply absent; a name it may
    never pass (`check_allow`) is refused."""
    named = set(allow)
    check_allow(named)
    return {k: v for k, v in environ.items() if k in named or is_base_name(k)}
