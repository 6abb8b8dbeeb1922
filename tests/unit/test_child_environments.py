"""No process sqlcanary starts inherits its environment (README, "Security model"): every subprocess call in bot/
names its child's environment (`env=`), built from an allow-list (bot.base.childenv), never os.environ. A
structural guard over the source, and the helper's behaviour."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.base.childenv import GIT_FIXED, allow_listed, git_environment
from bot.base.git import Git, git_sha

BOT = Path(__file__).resolve().parents[2] / "bot"
# bot/db/templates.py: its psql call is being removed (issue 23); the guard covers it again once it is gone.
EXEMPT = {"db/templates.py"}
# Calls that start a process and take `env=`; those that cannot take one are refused outright.
WITH_ENV = {
    ("subprocess", "run"),
    ("subprocess", "Popen"),
    ("subprocess", "call"),
    ("subprocess", "check_call"),
    ("subprocess", "check_output"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
}
NO_ENV = {
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
}
# os.exec*/os.spawn*: only the variants that take an environment (…e), with one that is not os.environ.
EXEC_PREFIXES = ("exec", "spawn")


def _dotted(node: ast.expr) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def _mentions_os_environ(node: ast.AST) -> bool:
    return any(
        _dotted(n) in (("os", "environ"), ("environ",))
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute | ast.Name)
    )


def _may_be_none(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.IfExp):
        return _may_be_none(node.body) or _may_be_none(node.orelse)
    return False


def _problem(call: ast.Call) -> str | None:
    name = _dotted(call.func)
    target = name[-2:] if len(name) >= 2 else name
    env = next((k.value for k in call.keywords if k.arg == "env"), None)
    if target in NO_ENV:
        return f"{'.'.join(target)}() cannot be given an environment: use subprocess with env="
    if len(target) == 2 and target[0] == "os" and target[1].startswith(EXEC_PREFIXES):
        if not target[1].endswith(("e", "pe")):
            return f"os.{target[1]}() passes the whole environment on: use os.{target[1]}e with an allow-list"
        env = call.args[-1] if call.args else None
    elif target not in WITH_ENV:
        return None
    if env is None:
        return f"{'.'.join(target)}() without env= (it would inherit os.environ)"
    if _may_be_none(env):
        return f"{'.'.join(target)}() with env=None (it would inherit os.environ)"
    if _mentions_os_environ(env):
        return f"{'.'.join(target)}() given os.environ: build the environment from an allow-list"
    return None


def problems(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in EXEMPT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (why := _problem(node)):
                found.append(f"bot/{rel}:{node.lineno}: {why}")
    return found


def test_no_subprocess_in_bot_inherits_the_environment() -> None:
    assert problems(BOT) == []


def test_the_guard_finds_each_way_to_inherit(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        "import os, subprocess\n"
        "subprocess.run(['git'])\n"
        "subprocess.Popen(['x'], env=None)\n"
        "subprocess.run(['x'], env={**os.environ, 'A': '1'})\n"
        "subprocess.check_output(['x'], env=dict(os.environ))\n"
        "subprocess.run(['x'], env=None if e is None else e)\n"
        "os.system('x')\n"
        "os.execvp('x', ['x'])\n"
        "os.execve('x', ['x'], os.environ)\n"
        "subprocess.run(['x'], env={'PATH': '/bin'})\n"  # fine
        "os.execve('x', ['x'], {'PATH': '/bin'})\n",  # fine
        encoding="utf-8",
    )
    found = problems(tmp_path)
    assert [f.split(":")[1] for f in found] == ["2", "3", "4", "5", "6", "7", "8", "9"]
    assert found[0].startswith("bot/bad.py:2: subprocess.run() without env=")


# ---- the helper ------------------------------------------------------------------------------------------------

HOSTILE = {
    "PATH": "/usr/local/bin:/usr/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_TIME": "en_GB.UTF-8",
    "LC_API_KEY": "sk-not-a-locale",
    "TZ": "UTC",
    "GITHUB_TOKEN": "ghs_secret",
    "INPUT_GITHUB-TOKEN": "ghs_secret",
    "INPUT_LLM-API-KEY": "sk-secret",
    "OPENAI_API_KEY": "sk-secret",
    "DATABASE_URL": "postgresql://admin:pw@db/x",
    "ACTIONS_RUNTIME_TOKEN": "t",
    "HTTPS_PROXY": "http://user:pw@proxy",
    "PYTHONPATH": "/pr/code",
    "GIT_DIR": "/elsewhere/.git",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "/pr/evil.sh",
    "GIT_SSH_COMMAND": "/pr/evil.sh",
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def test_allow_listed_keeps_what_a_program_needs_and_nothing_that_authorises() -> None:
    assert allow_listed(HOSTILE) == {
        "PATH": "/usr/local/bin:/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "TZ": "UTC",
    }


def test_allow_listed_without_an_environment_gives_the_default_path_only() -> None:
    assert allow_listed(None) == {"PATH": os.defpath}
    assert allow_listed({"HOME": "/h"}) == {"HOME": "/h", "PATH": os.defpath}
    assert allow_listed(HOSTILE, names=("PYTHONPATH",))["PYTHONPATH"] == "/pr/code"


def test_git_gets_its_identity_and_never_a_repository_a_config_or_a_program_of_the_parents() -> None:
    env = git_environment(HOSTILE)
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "TZ": "UTC",
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        **GIT_FIXED,
    }
    assert git_environment(None) == {"PATH": os.defpath, **GIT_FIXED}


def _printenv_git(tmp_path: Path) -> Path:
    """A `git` on a PATH of its own that prints the environment it was given."""
    tools = tmp_path / "tools"
    tools.mkdir()
    fake = tools / "git"
    fake.write_text(f"#!{sys.executable}\nimport json, os\nprint(json.dumps(dict(os.environ)))\n")
    fake.chmod(0o755)
    return tools


def test_git_runs_with_exactly_the_environment_it_is_given(tmp_path: Path) -> None:
    tools = _printenv_git(tmp_path)
    given = git_environment({**HOSTILE, "PATH": str(tools)})
    seen = json.loads(Git(tmp_path, env=given).run("version").stdout)
    seen.pop("LC_CTYPE", None)  # Python may set it for its own child on a C locale (PEP 538)
    assert seen == given


def test_a_git_that_is_only_on_the_parents_path_is_not_found_without_an_environment(
    tmp_path: Path, monkeypatch
) -> None:
    tools = _printenv_git(tmp_path)
    monkeypatch.setenv("PATH", str(tools))  # the parent's PATH: never handed on, so never searched
    monkeypatch.setenv("SQLCANARY_TEST_PARENT_SECRET", "ghs_parent")
    out = Git(tmp_path).run("version")  # the real git of os.defpath, or none
    assert "ghs_parent" not in out.stdout and str(tools) not in out.stdout
    assert git_sha(tmp_path) is None  # no repository here, and no error either


def test_a_command_agent_without_an_environment_inherits_nothing(tmp_path: Path, monkeypatch) -> None:
    from bot.agents.pipes import start

    monkeypatch.setenv("SQLCANARY_TEST_INHERITED", "yes")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_parent")
    code = "import json, os, sys; sys.stdout.write(json.dumps(dict(os.environ)))"
    proc = start([sys.executable, "-c", code], str(tmp_path), env=None)
    out, _ = proc.communicate(timeout=60)
    seen = json.loads(out)
    seen.pop("LC_CTYPE", None)
    assert seen == {"PATH": os.defpath}


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "OPENAI_API_KEY", "DATABASE_URL"])
def test_no_credential_reaches_a_git_child(name: str) -> None:
    code = "import os, sys; sys.stdout.write(os.environ.get(sys.argv[1], '<absent>'))"
    env = git_environment(HOSTILE)
    done = subprocess.run(
        [sys.executable, "-c", code, name], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout == "<absent>"
