"""Webhook intake throughput and p99 ack latency of one `plangate web` process (run by hand).

    .venv/bin/python -m benchmarks.bench_webhook [--seconds 15] [--probot [--rounds 5]]

With --probot, the same load hits a Probot app doing the same work (verify, route, push one
job to Redis; benchmarks/probot/, installed with npm into a temp dir), both servers running side
by side and loaded in turn (A/B, `--rounds` times: this machine is noisy), and the median of the
per-round throughput ratios is printed. Both log at `--log-level` (default warning, where each logs
only what it refuses: Probot's `logLevel: "warn"`, plangate's PLANGATE_LOG_LEVEL=warning); at info,
plangate also logs a line per accepted delivery.

Loads a signed ~25 KB `pull_request.synchronize` payload (500 distinct head SHAs, so most
deliveries really enqueue) into a wrk Lua script, then runs wrk twice against one web process
backed by a real Redis: flat out (deliveries/s), and paced at ~200 deliveries/s (p99 ack latency).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from standin.keys import new_private_key_pem
from standin.local_redis import free_port, private_redis
from standin.stack import wait_http

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "github" / "webhooks" / "pull_request.synchronize.json"
SECRET = "bench-secret"
TARGET_P99_MS = 10.0  # p99 at ~200 deliveries/s
PINO_LEVELS = {"debug": "debug", "info": "info", "warning": "warn", "error": "error"}  # Probot's names


def _lua_script(count: int) -> str:
    base = json.loads(FIXTURE.read_text())
    entries = []
    for i in range(count):
        base["pull_request"]["head"]["sha"] = hashlib.sha1(f"bench-{i}".encode()).hexdigest()
        body = json.dumps(base)
        sig = hmac.new(SECRET.encode(), body.encode(), hashlib.sha256).hexdigest()
        entries.append(f"{{body={json.dumps(body)}, sig={json.dumps('sha256=' + sig)}}}")
    return (
        "local payloads = {" + ",\n".join(entries) + "}\n"
        "local i = 0\n"
        "local pace = tonumber(os.getenv('BENCH_DELAY_MS') or '0')\n"
        "request = function()\n"
        "  i = i % #payloads + 1\n"
        "  local p = payloads[i]\n"
        "  local h = {['Content-Type']='application/json', ['X-GitHub-Event']='pull_request',\n"
        f"    ['X-GitHub-Delivery']='{uuid.uuid4()}-' .. i, ['X-Hub-Signature-256']=p.sig}}\n"
        "  return wrk.format('POST', '/webhook', h, p.body)\n"
        "end\n"
        "delay = function() return pace end\n"
        "done = function(summary, latency, requests)\n"
        "  io.write(string.format('P99_US %d\\nP50_US %d\\nREQS %d\\nNON2XX %d\\n', latency:percentile(99),\n"
        "    latency:percentile(50), summary.requests, summary.errors.status))\n"
        "end\n"
    )


def _wrk(url: str, script: Path, seconds: int, connections: int, delay_ms: int) -> dict[str, float]:
    env = dict(os.environ, BENCH_DELAY_MS=str(delay_ms))
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    values = dict(re.findall(r"^(P99_US|P50_US|REQS|NON2XX) (\d+)$", out, re.M))
    return {k: float(v) for k, v in values.items()} | {"seconds": float(seconds)}


def _load(url: str, script: Path, seconds: int) -> dict[str, float]:
    """Warm up, then flat out (deliveries/s), then paced at ~200 deliveries/s (p50/p99)."""
    _wrk(url + "/webhook", script, 3, 4, 0)
    flat = _wrk(url + "/webhook", script, seconds, 16, 0)
    paced = _wrk(url + "/webhook", script, seconds, 4, 20)  # 4 connections × a 20 ms pause ≈ 200/s
    return {
        "rate": flat["REQS"] / flat["seconds"],
        "non2xx": flat["NON2XX"] + paced["NON2XX"],
        "paced_rate": paced["REQS"] / paced["seconds"],
        "p50": paced["P50_US"] / 1000,
        "p99": paced["P99_US"] / 1000,
    }


@contextmanager
def _plangate(redis_url: str, log_level: str) -> Iterator[str]:
    port = free_port()
    env = dict(os.environ, GITHUB_WEBHOOK_SECRET=SECRET, REDIS_URL=redis_url, PLANGATE_LOG_LEVEL=log_level)
    cmd = [sys.executable, "-m", "plangate", "web", "--host", "127.0.0.1", "--port", str(port)]
    web = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        yield f"http://127.0.0.1:{port}"
    finally:
        web.terminate()
        web.wait(10)


@contextmanager
def _probot(redis_url: str, tmp: Path, log_level: str) -> Iterator[str]:
    app = tmp / "probot"
    shutil.copytree(Path(__file__).parent / "probot", app)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=app, check=True)
    port = free_port()
    env = dict(
        os.environ,
        WEBHOOK_SECRET=SECRET,
        REDIS_URL=redis_url,
        PORT=str(port),
        PRIVATE_KEY=new_private_key_pem(),
        LOG_LEVEL=PINO_LEVELS[log_level],
    )
    node = subprocess.Popen(["node", "index.js"], cwd=app, env=env, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        node.terminate()
        node.wait(10)


def _wait_port(port: int) -> None:
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--seconds", type=int, default=15)
    args.add_argument("--probot", action="store_true", help="also run the Probot baseline (needs node and npm)")
    args.add_argument("--rounds", type=int, default=5, help="A/B rounds of flat-out load with --probot")
    args.add_argument("--log-level", choices=PINO_LEVELS, default="warning", help="both servers' log level")
    opts = args.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is required: apt-get install -y wrk", file=sys.stderr)
        return 2
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
        script = Path(tmp) / "deliveries.lua"
        script.write_text(_lua_script(500))
        urls = {"plangate": servers.enter_context(_plangate(redis_url, opts.log_level))}
        if opts.probot:
            urls["probot"] = servers.enter_context(_probot(redis_url, Path(tmp), opts.log_level))
        results = {name: _load(url, script, opts.seconds) for name, url in urls.items()}
        ratios = []
        if opts.probot:
            for _ in range(opts.rounds):
                ours = _wrk(urls["plangate"] + "/webhook", script, opts.seconds, 16, 0)
                theirs = _wrk(urls["probot"] + "/webhook", script, opts.seconds, 16, 0)
                ratios.append(ours["REQS"] / theirs["REQS"])
    body_kb = len(json.dumps(json.loads(FIXTURE.read_text()))) / 1024
    print(
        f"payload: pull_request.synchronize, {body_kb:.1f} KB, signed; one process each; real Redis; wrk; "
        f"log level {opts.log_level}"
    )
    for name, r in results.items():
        print(
            f"{name:8}  flat out {r['rate']:6.0f} deliveries/s | paced {r['paced_rate']:4.0f}/s: "
            f"p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms | non-2xx {r['non2xx']:.0f}"
        )
    p = results["plangate"]
    print(f"p99 target ≤ {TARGET_P99_MS:.0f} ms: plangate at {p['p99'] / TARGET_P99_MS:.2f}× the target")
    if ratios:
        b = results["probot"]
        each = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"plangate / probot throughput, A/B rounds: {each}; median {statistics.median(ratios):.2f}× (target ≥ 1)")
        print(f"plangate / probot p99 at ~200/s: {p['p99'] / b['p99']:.2f}× (lower is better)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
