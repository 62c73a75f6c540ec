"""plangate as it runs for real, against the stand-in: `plangate web` and `plangate worker` processes.

Used by the end-to-end tests, the benchmarks and `make demo`.
"""

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
import redis
from rq import Worker

from standin.facade import StandIn
from standin.keys import new_private_key_pem
from standin.local_redis import free_port
from standin.server import start

T = TypeVar("T")


@dataclass
class Stack:
    gh: StandIn
    private_key: str
    web_url: str
    env: dict[str, str]
    logs: Path
    workers: list[subprocess.Popen[bytes]]

    def worker_log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("worker-*.log")))

    def wait_for(self, what: str, probe: Callable[[], T | None], timeout: float = 120.0, every: float = 0.1) -> T:
        """Poll `every` seconds until `probe` returns something truthy; fail with the worker log on timeout.
        (Benchmarks poll often: the interval is otherwise part of what they measure.)"""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = probe()
            if value:
                return value
            time.sleep(every)
        raise AssertionError(f"timed out waiting for {what}\n--- worker log ---\n{self.worker_log()[-6000:]}")


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def _wait_workers(redis_url: str, count: int, timeout: float = 60.0) -> None:
    """Until `count` workers have registered with RQ: a test may stop Redis right after the start."""
    conn = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + timeout
    while len(Worker.all(connection=conn)) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} worker(s) did not start")
        time.sleep(0.1)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def running_stack(
    root: Path,
    redis_url: str,
    *,
    workers: int = 1,
    secret: str = "stand-in-webhook-secret",
    web_port: int = 0,
    extra_env: dict[str, str] | None = None,
    key_file: bool = False,
) -> Iterator[Stack]:
    """The stand-in (in this process), one web and `workers` worker processes; all stopped afterwards.

    `key_file`: hand the App key over as GITHUB_APP_PRIVATE_KEY_PATH (a 0600 file) instead of the env.
    """
    key = new_private_key_pem()
    gh = StandIn(root / "github", key, app_id=4242, slug="plangate", webhook_secret=secret)
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with start(gh) as server:
        port = web_port or free_port()
        gh.app.callback_urls = [f"http://127.0.0.1:{port}/auth/callback"]
        key_setting = {"GITHUB_APP_PRIVATE_KEY": key}
        if key_file:
            path = root / "secrets" / "app.pem"
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_text(key)
            path.chmod(0o600)
            key_setting = {"GITHUB_APP_PRIVATE_KEY_PATH": str(path)}
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "GITHUB_APP_ID": str(gh.app.id),
            **key_setting,
            "GITHUB_WEBHOOK_SECRET": secret,
            "GITHUB_CLIENT_ID": gh.app.client_id,
            "GITHUB_CLIENT_SECRET": gh.app.client_secret,
            "GITHUB_API_URL": server.base_url,
            "REDIS_URL": redis_url,
            "PLANGATE_WORKDIR": str(root / "work"),
            "PLANGATE_TF_TIMEOUT": "300",
            # The sample projects keep their local state in `state`, outside every checkout: read-only
            # to plans (a PR's code runs in them), writable to the apply after a merge, as docs/settings.md
            # recommends. `marks` is where the tests' terraform wrappers note what they did (a call
            # log, a marker): writable to every step, and nothing a plan or an apply relies on.
            "PLANGATE_SANDBOX_PATHS_PLAN": f"{root / 'state'},{root / 'marks'}:rw",
            "PLANGATE_SANDBOX_PATHS_APPLY": f"{root / 'state'}:rw,{root / 'marks'}:rw",
            **(extra_env or {}),
        }
        cli = [sys.executable, "-m", "plangate"]
        web_log = (logs / "web.log").open("wb")
        procs = [
            subprocess.Popen(
                [*cli, "web", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=web_log,
                stderr=subprocess.STDOUT,
            )
        ]
        for i in range(workers):
            log = (logs / f"worker-{i}.log").open("wb")
            procs.append(subprocess.Popen([*cli, "worker"], env=env, stdout=log, stderr=subprocess.STDOUT))
        try:
            web_url = f"http://127.0.0.1:{port}"
            wait_http(web_url + "/readyz")
            _wait_workers(redis_url, workers)
            gh.app.webhook_url = web_url + "/webhook"
            yield Stack(gh=gh, private_key=key, web_url=web_url, env=env, logs=logs, workers=procs[1:])
        finally:
            _stop(procs)
