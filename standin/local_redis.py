"""A private, throwaway redis-server on a free loopback port (tests, benchmarks, the demo).

It requires a password, as every Redis plangate uses must: terraform shares the worker's network.
The password goes to redis-server on stdin (`redis-server -`), never on its command line.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def private_redis() -> Iterator[str]:
    """Yield the URL of a fresh redis-server that lives only as long as the block."""
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server is not installed (Debian: apt-get install -y redis-server)")
    port = free_port()
    password = secrets.token_hex(16)
    tmp = tempfile.mkdtemp(prefix="plangate-redis-")
    proc = subprocess.Popen(
        [server, "-", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(f"requirepass {password}\n".encode())
    proc.stdin.close()
    url = f"redis://:{password}@127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the private redis-server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
