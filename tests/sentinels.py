"""A real Redis Sentinel setup for the tests: a master, a replica and one sentinel watching them, each a
redis-server on a free loopback port, all requiring passwords (the sentinel its own)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import redis

from standin.local_redis import free_port

SERVICE = "mymaster"
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Poll until `probe` gives something truthy (a redis.ConnectionError counts as not yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = probe()
            if found:
                return found
        except redis.ConnectionError:
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@dataclass
class Sentinels:
    root: Path
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    sentinel_password: str = field(default_factory=lambda: secrets.token_hex(16))
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        """REDIS_URL as an operator writes it; the passwords come apart, as REDIS_*PASSWORD_PATH files."""
        return f"redis+sentinel://127.0.0.1:{self.ports['sentinel']}/{SERVICE}/0"

    def server(self, name: str) -> redis.Redis:
        """A direct client of one of the redis-servers (not through Sentinel)."""
        password = self.sentinel_password if name == "sentinel" else self.password
        return redis.Redis(port=self.ports[name], password=password)

    def master_port(self) -> int:
        found = self.server("sentinel").sentinel_get_master_addr_by_name(SERVICE)
        assert isinstance(found, tuple), found
        return int(found[1])

    def start(self, name: str, lines: list[str], *extra: str) -> None:
        self.ports[name] = port = free_port()
        config = self.root / f"{name}.conf"  # Sentinel rewrites its configuration file: one of its own
        config.write_text("\n".join([f"port {port}", "bind 127.0.0.1", f"dir {self.root}", *lines]) + "\n")
        server = shutil.which("redis-server")
        assert server, "redis-server is needed (Debian: apt-get install redis-server)"
        log = (self.root / f"{name}.log").open("wb")
        self.procs.append(subprocess.Popen([server, str(config), *extra], stdout=log, stderr=subprocess.STDOUT))
        wait_for(f"{name} on port {port}", self.server(name).ping, timeout=20)

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(10)


@contextmanager
def sentinel_setup(root: Path) -> Iterator[Sentinels]:
    """Master and replica in sync, and a sentinel that knows them both (so it can fail over at once)."""
    setup = Sentinels(root)
    auth = [f"requirepass {setup.password}", f"masterauth {setup.password}", "save ''", "appendonly no"]
    try:
        setup.start("master", auth)
        setup.start("replica", [*auth, f"replicaof 127.0.0.1 {setup.ports['master']}"])
        wait_for(
            "the replica's sync", lambda: setup.server("replica").info("replication")["master_link_status"] == "up"
        )
        master = setup.ports["master"]
        setup.start(
            "sentinel",
            [
                f"requirepass {setup.sentinel_password}",
                f"sentinel monitor {SERVICE} 127.0.0.1 {master} 1",
                f"sentinel auth-pass {SERVICE} {setup.password}",
                f"sentinel down-after-milliseconds {SERVICE} 1000",
                f"sentinel failover-timeout {SERVICE} 10000",
            ],
            "--sentinel",
        )
        sentinel = setup.server("sentinel")

        def promotable() -> bool:  # connected and in sync, as SENTINEL FAILOVER requires of a replica
            return any(
                r["flags"] == "slave" and r["master-link-status"] == "ok" for r in sentinel.sentinel_slaves(SERVICE)
            )

        wait_for("the sentinel to find the replica promotable", promotable)
        yield setup
    finally:
        setup.stop()
