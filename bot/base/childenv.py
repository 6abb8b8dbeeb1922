"""The environment of every process sqlcanary starts: built from an allow-list, never inherited.

`subprocess` given no `env` (or `env=None`) hands the child the whole of sqlcanary's environment: the GitHub
token, the Action's inputs, the LLM key, DATABASE_URL. So no child gets it: each is given a mapping built here
(or by bot.agents.env, which adds what the config names for an agent) from the environment that `main()` read
(`Settings.environ`). tests/unit/test_child_environments.py fails on a call that passes no `env=`.

The allow-list is what a program needs to start and to speak the user's language: PATH, HOME, the user's name,
the locale (LANG, LANGUAGE, LC_*), TZ, the temp folders, the dynamic loader's LD_LIBRARY_PATH (an interpreter
whose shared library lives outside the system's folders cannot start without it), and what Windows cannot start
a process without. A name
that looks secret (`LC_API_KEY`) never passes. Given no environment at all, a child gets PATH=os.defpath only.

git gets the same, plus the commit identity variables (GIT_AUTHOR_*, GIT_COMMITTER_*) and
GIT_TERMINAL_PROMPT=0; no other GIT_* variable of the parent's reaches it (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
GIT_CONFIG_*, GIT_SSH_COMMAND, GIT_ASKPASS would point git at another repository or run a program). Its system
and global configuration are still read (the image's `safe.directory`, a developer's own settings)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from bot.base.secrets import is_secret_name

PROCESS_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "LD_LIBRARY_PATH",  # the loader's: a Python or driver installed outside the system's library folders
        "TMPDIR",
        "TEMP",
        "TMP",
        "SYSTEMROOT",
        "WINDIR",
        "COMSPEC",
        "PATHEXT",  # Windows: a process cannot start without them
    }
)
LOCALE_PREFIXES = ("LC_",)
GIT_IDENTITY = frozenset({"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"})
GIT_FIXED = {"GIT_TERMINAL_PROMPT": "0"}  # git never waits for a password on a terminal nobody watches


def _key(name: str) -> str:
    return name.upper() if os.name == "nt" else name  # Windows names ignore case


def on_allow_list(name: str, *, names: Iterable[str] = (), prefixes: tuple[str, ...] = ()) -> bool:
    """`name` is on the allow-list (PROCESS_NAMES, LC_*) or among `names` / `prefixes`, and does not look secret
    (`LC_API_KEY` is not a locale setting)."""
    key = _key(name)
    listed = key in PROCESS_NAMES or key in {_key(n) for n in names}
    return (listed or key.startswith((*LOCALE_PREFIXES, *prefixes))) and not is_secret_name(name)


def allow_listed(
    environ: Mapping[str, str] | None, *, names: Iterable[str] = (), prefixes: tuple[str, ...] = ()
) -> dict[str, str]:
    """The variables of `environ` on the allow-list (on_allow_list); PATH=os.defpath when `environ` gives none (a
    child must find its programs)."""
    names = tuple(names)
    out = {k: v for k, v in (environ or {}).items() if on_allow_list(k, names=names, prefixes=prefixes)}
    if not any(_key(k) == "PATH" for k in out):
        out["PATH"] = os.defpath
    return out


def git_environment(environ: Mapping[str, str] | None) -> dict[str, str]:
    """git's whole environment: the allow-list of `environ`, the commit identity variables, and
    GIT_TERMINAL_PROMPT=0. A caller adds what one git needs (a token as GIT_CONFIG_*, a GIT_DIR) to a copy."""
    return {**allow_listed(environ, names=GIT_IDENTITY), **GIT_FIXED}
