"""A door to the server for one unprivileged process, as one role into one database.

As root, the embedded server's socket is root's alone (bot.db.provision.close_socket): it trusts whoever opens
it, as any role, the superuser included. A process of an unprivileged user (the fixture loader,
bot.run.fixture_apart) still needs to reach it, as the restricted role and nothing else. A `Door` is a socket of
its own, in a folder of its own, that only that user may open; each connection through it is relayed to the
server after its startup packet is read and checked: protocol 3, `user` the one role, `database` the one
database, no replication. Anything else is closed before a byte reaches the server. A cancel request (how a
client stops a statement, bot.db.fixture_load's budget) carries only a backend's key and is passed on as it is.
An SSL or GSS request is answered "no": the relay is a local socket.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import tempfile
import threading
from pathlib import Path

from psycopg2.extensions import make_dsn

_SSL_REQUEST = 80877103
_GSS_REQUEST = 80877104
_CANCEL = 80877102
_MAX_STARTUP = 10_000  # libpq's own limit for a startup packet
_CHUNK = 1 << 16


class Door:
    """Listen for `uid` at a socket that relays to `upstream` (the server's socket file) as `user` into
    `dbname` only, in a folder made in `parent` (root's own, that `uid` may search: the sandbox's root). `dsn`
    is what the user connects with. A context manager: closing ends every relay."""

    def __init__(
        self, upstream: Path, *, uid: int, user: str, dbname: str, parent: Path | None = None
    ) -> None:
        self.upstream, self.user, self.dbname = upstream, user, dbname
        self.folder = Path(tempfile.mkdtemp(prefix="sqlcanary-door-", dir=parent))
        self.folder.chmod(0o711)  # the user may reach the socket in it, not list or write the folder
        port = upstream.name.rsplit(".", 1)[-1]
        path = self.folder / f".s.PGSQL.{port}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        os.chown(path, uid, uid, follow_symlinks=False)
        path.chmod(0o600)
        self.listener.listen(8)
        self.dsn = make_dsn(host=str(self.folder), port=port, user=user, dbname=dbname, sslmode="disable")
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, name="sqlcanary-door", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.closing(client):
            packet = self._startup(client)
            if packet is None:
                return
            with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)) as server:
                try:
                    server.connect(str(self.upstream))
                    server.sendall(packet)
                except OSError:
                    return
                _relay(client, server, self._stop)

    def _startup(self, client: socket.socket) -> bytes | None:
        """The client's startup packet when it may pass (SSL and GSS requests answered "no" on the way)."""
        while True:
            head = _read_exactly(client, 8)
            if head is None:
                return None
            length, code = struct.unpack("!ii", head)
            if length < 8 or length > _MAX_STARTUP:
                return None
            body = _read_exactly(client, length - 8)
            if body is None:
                return None
            if code in (_SSL_REQUEST, _GSS_REQUEST):
                client.sendall(b"N")
                continue
            if code == _CANCEL:
                return head + body
            if code >> 16 != 3 or not self._allowed(_parameters(body)):
                return None
            return head + body

    def _allowed(self, params: dict[str, str] | None) -> bool:
        if params is None or "replication" in params:
            return False
        return params.get("user") == self.user and params.get("database", self.user) == self.dbname

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._accepting.join(timeout=5)
        for t in self._threads:
            t.join(timeout=5)
        for entry in self.folder.iterdir():
            entry.unlink(missing_ok=True)
        self.folder.rmdir()

    def __enter__(self) -> Door:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parameters(body: bytes) -> dict[str, str] | None:
    """The startup packet's `name\\0value\\0...\\0` pairs, or None when they are not well formed."""
    if body == b"\0":
        return {}
    if not body.endswith(b"\0\0"):
        return None
    parts = body[:-2].split(b"\0")
    if len(parts) % 2:
        return None
    try:
        return {parts[i].decode(): parts[i + 1].decode() for i in range(0, len(parts), 2)}
    except UnicodeDecodeError:
        return None


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def _relay(a: socket.socket, b: socket.socket, stop: threading.Event) -> None:
    """Bytes both ways until either side closes or the door does."""
    peer = {a: b, b: a}
    with selectors.DefaultSelector() as sel:
        sel.register(a, selectors.EVENT_READ)
        sel.register(b, selectors.EVENT_READ)
        while not stop.is_set():
            for key, _ in sel.select(timeout=0.5):
                src = key.fileobj
                assert isinstance(src, socket.socket)
                try:
                    data = src.recv(_CHUNK)
                    if not data:
                        return
                    peer[src].sendall(data)
                except OSError:
                    return
