"""The fixtures benchmarks/mutation/test_verdict_fixtures.py borrows from tests/conftest.py (a real PostgreSQL,
no answer cache, fresh decision caches per test). Only fixtures: tests/conftest.py's hooks stay its own."""

from tests.conftest import _fresh_decision_caches, _no_answer_cache, pg_dsn, pg_server  # noqa: F401
