"""End-to-end harness: the GitHub stand-in, a real `plangate web`, real `plangate worker`s, real Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

from standin.facade import StandIn
from standin.server import start
from tests.conftest import free_port
from tests.keys import rsa_pem
from tests.webhooks import SECRET

T = TypeVar("T")


@dataclass
class Stack:
    gh: StandIn
    web_url: str
    env: dict[str, str]
    logs: Path
    workers: list[subprocess.Popen[bytes]]

    def worker_log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("worker-*.log")))


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 120.0, stack: Stack | None = None) -> T:
    """Poll until `probe` returns something truthy; fail with the worker log on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    tail = stack.worker_log()[-6000:] if stack else ""
    raise AssertionError(f"timed out waiting for {what}\n--- worker log ---\n{tail}")


def _wait_http(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not come up")


@contextmanager
def running_stack(tmp: Path, redis_url: str, workers: int = 1) -> Iterator[Stack]:
    """Everything plangate needs, started as separate processes, stopped afterwards."""
    key = rsa_pem()
    gh = StandIn(tmp / "github", key, app_id=4242, slug="plangate", webhook_secret=SECRET)
    logs = tmp / "logs"
    logs.mkdir()
    with start(gh) as server:
        port = free_port()
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp),
            "GITHUB_APP_ID": "4242",
            "GITHUB_APP_PRIVATE_KEY": key,
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": server.base_url,
            "REDIS_URL": redis_url,
            "PLANGATE_WORKDIR": str(tmp / "work"),
            "PLANGATE_TF_TIMEOUT": "300",
        }
        web_log = (logs / "web.log").open("wb")
        web = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "web", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=web_log,
            stderr=subprocess.STDOUT,
        )
        procs = []
        for i in range(workers):
            log = (logs / f"worker-{i}.log").open("wb")
            procs.append(
                subprocess.Popen([sys.executable, "-m", "bot.cli", "worker"], env=env, stdout=log, stderr=log)
            )
        try:
            web_url = f"http://127.0.0.1:{port}"
            _wait_http(web_url + "/readyz")
            gh.app.webhook_url = web_url + "/webhook"
            yield Stack(gh=gh, web_url=web_url, env=env, logs=logs, workers=procs)
        finally:
            for proc in [web, *procs]:
                proc.terminate()
            for proc in [web, *procs]:
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
