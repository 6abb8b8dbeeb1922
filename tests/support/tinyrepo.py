"""A tiny git repository for end-to-end tests of `check` and the Action: three cases on a two-row table, and a
`command:` agent that answers from `data/answers.json` (a file its command does not name). An answer starting with
`!leak ` makes the agent print the rest to stderr and fail, as an agent that found a token and spilled it would."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

SUITE_YML = "name: tiny\ndatabases:\n  shop: shop.sql\n"
CASES_YML = """\
- id: count
  question: How many customers?
  gold_sql: SELECT count(*) FROM customers
- id: names
  question: Names of the customers?
  gold_sql: SELECT name FROM customers
- id: cities
  question: Which cities?
  gold_sql: SELECT DISTINCT city FROM customers
"""
FIXTURE = (
    "CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, city text);\n"
    "INSERT INTO customers VALUES (1, 'Ada', 'Paris'), (2, 'Bo', 'Rome');\n"
)
AGENT = """\
import json, pathlib, sys
request = json.load(sys.stdin)
answers = json.loads((pathlib.Path(__file__).resolve().parents[2] / "data" / "answers.json").read_text())
answer = answers[request["id"]]
if answer.startswith("!leak "):
    print("agent: found " + answer[6:], file=sys.stderr)
    sys.exit(1)
print(json.dumps({"sql": answer, "used": ["../../data/answers.json:1"]}))
"""
GOOD = {
    "count": "SELECT count(*) FROM customers",
    "names": "SELECT name FROM customers",
    "cities": "SELECT DISTINCT city FROM customers",
}
CONFIG = "evals/agent/sqlcanary.yml"


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def config(inputs: list[str] | None = None) -> str:
    agent = {"spec": "command:python3 agent.py"} | ({"inputs": inputs} if inputs is not None else {})
    return f"suite: ../suite\nagent: {json.dumps(agent)}\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def make_tiny_repo(root: Path, answers: dict[str, str] | None = None) -> Path:
    """The repository on branch `main`, one commit."""
    write(
        root,
        {
            "evals/suite/suite.yml": SUITE_YML,
            "evals/suite/cases/all.yml": CASES_YML,
            "evals/suite/shop.sql": FIXTURE,
            "evals/agent/agent.py": AGENT,
            CONFIG: config(),
            "data/answers.json": json.dumps(answers or GOOD),
        },
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def commit_answers(root: Path, answers: dict[str, str], message: str) -> str:
    (root / "data/answers.json").write_text(json.dumps(answers))
    git(root, "commit", "-qam", message)
    return git(root, "rev-parse", "HEAD")
