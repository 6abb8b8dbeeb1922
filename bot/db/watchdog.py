"""A thread that cancels a connection's running statement once its deadline has passed."""

from __future__ import annotations

import threading
import time

import psycopg2
import psycopg2.extensions

WATCHDOG_GRACE_S = 3.0


class Watchdog:
    """A thread that cancels the connection's running statement once its deadline has passed."""

    def __init__(self, conn: psycopg2.extensions.connection) -> None:
        self._conn = conn
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="sqlcanary-watchdog", daemon=True)
        self._thread.start()

    def arm(self, seconds: float) -> None:
        with self._cond:
            self._deadline = time.monotonic() + seconds
            self._cond.notify()

    def disarm(self) -> None:
        self._deadline = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._deadline = None
                try:
                    self._conn.cancel()
                except psycopg2.Error:
                    pass
