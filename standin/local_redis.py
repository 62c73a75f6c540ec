"""A private, throwaway redis-server on a free loopback port (tests, benchmarks, the demo).

It requires a password, as every Redis plangate uses must: terraform shares the worker's network.
The password goes to redis-server on stdin (`redis-server -`), never on its command line.
"""

from __future__ import annotations

import random
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis

# Below Linux's ephemeral range (32768-60999): a port the kernel picks for an outgoing connection (tests
# run three queues of workers side by side) can never take a server's port between choice and bind.
LISTEN_PORTS = range(20000, 32000)


def free_port() -> int:
    """A loopback port nothing listens on now, outside the ephemeral range."""
    for port in random.sample(LISTEN_PORTS, 50):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-31999")


class PrivateRedis:
    """A redis-server on a fixed loopback port and password that can be stopped and started again,
    empty each time (no persistence): a Redis restart that lost its data, for the outage tests.
    `options`: more redis-server options (an append-only file, for the benchmarks of its cost)."""

    def __init__(self, *options: str) -> None:
        server = shutil.which("redis-server")
        if server is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install -y redis-server)")
        self._server = server
        self.port = free_port()
        self.password = secrets.token_hex(16)
        self.url = f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        self._dir = tempfile.mkdtemp(prefix="plangate-redis-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._options = options

    def start(self) -> None:
        args = ["-", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        proc = subprocess.Popen(
            [self._server, *args, "--dir", self._dir, *self._options], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        assert proc.stdin is not None
        proc.stdin.write(f"requirepass {self.password}\n".encode())
        proc.stdin.close()
        self._proc = proc
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the private redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


@contextmanager
def private_redis(*options: str) -> Iterator[str]:
    """Yield the URL of a fresh redis-server that lives only as long as the block."""
    server = PrivateRedis(*options)
    try:
        server.start()
        yield server.url
    finally:
        server.close()
