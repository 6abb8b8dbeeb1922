"""One root error and its subclasses; `error_boundary` maps them to exit codes.

Exit codes: 0 ok, 1 quality gate failed, 2 a known failure (bad input, database, agent, LLM),
3 an unexpected crash (a bug), 130 interrupted.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_OK = 0
EXIT_GATE = 1
EXIT_BAD_INPUT = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130


class SqlcanaryError(Exception):
    """A known failure: the message is meant for the user and names what to fix."""

    exit_code = EXIT_BAD_INPUT

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        case_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.case_id = case_id

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.case_id:
            where = f"{where} (case {self.case_id})" if where else f"case {self.case_id}"
        return f"{where}: {self.message}" if where else self.message


class ConfigError(SqlcanaryError):
    """sqlcanary.yml or a command-line option is wrong."""


class CaseFileError(SqlcanaryError):
    """A suite, a case file or a fixture is wrong."""


class DatabaseError(SqlcanaryError):
    """PostgreSQL could not be started, reached or prepared."""


class AgentError(SqlcanaryError):
    """The agent could not be started or configured (per-case failures are recorded, not raised)."""


class ResultFileError(SqlcanaryError):
    """A saved RunResult cannot be read."""


@contextmanager
def error_boundary(exit_codes: list[int]) -> Iterator[None]:
    """Run a command body; store its exit code in `exit_codes[0]` on a known failure or a bug."""
    try:
        yield
    except SqlcanaryError as exc:
        print(f"sqlcanary: error: {exc}", file=sys.stderr)
        exit_codes[0] = exc.exit_code
    except KeyboardInterrupt:
        print("sqlcanary: interrupted", file=sys.stderr)
        exit_codes[0] = EXIT_INTERRUPTED
    except Exception:  # noqa: BLE001 - the boundary of the program
        print("sqlcanary: internal error (a bug, please report it):", file=sys.stderr)
        traceback.print_exc()
        exit_codes[0] = EXIT_BUG
