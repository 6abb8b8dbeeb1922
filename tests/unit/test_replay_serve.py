"""`sqlcanary llm serve --replay FILE` as a real process: it prints the base URL, the real `openai` client gets
the scripted reply there, each request is reported with the line that answered it; a bad file exits 2 naming
file:line before anything listens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import openai

REPLIES = 'replies:\n  - kind: chat\n    reply: \'{"sql": "SELECT 42"}\'\n'


def sqlcanary(*args: str) -> list[str]:
    return [sys.executable, "-m", "bot", *args]


def test_serve_prints_its_url_and_answers_the_openai_client(tmp_path: Path):
    replies = tmp_path / "replies.yml"
    replies.write_text(REPLIES)
    proc = subprocess.Popen(
        sqlcanary("llm", "serve", "--replay", str(replies)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=30)
        reply = client.chat.completions.create(model="any", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == '{"sql": "SELECT 42"}'
        assert [m.id for m in client.models.list()] == ["replay"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "kind chat -> " + f"{replies}:2" in err


def test_serve_refuses_a_bad_file_with_exit_2(tmp_path: Path):
    replies = tmp_path / "replies.yml"
    replies.write_text("replies:\n  - kind: chat\n    replyy: x\n")
    done = subprocess.run(
        sqlcanary("llm", "serve", "--replay", str(replies)), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert f"{replies}:3: unknown key `replyy`: did you mean `reply`?" in done.stderr


def test_serve_needs_what_to_serve(tmp_path: Path):
    for args, words in [
        (["llm"], "give an action: sqlcanary llm serve"),
        (["llm", "serve", "--record", str(tmp_path / "r.yml")], "--record FILE needs --upstream URL"),
        (["llm", "serve", "--replay", str(tmp_path / "none.yml")], "no such replay file"),
    ]:
        done = subprocess.run(sqlcanary(*args), capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
