"""Webhook intake throughput and p99 ack latency of one `plangate web` process (run by hand).

    .venv/bin/python -m benchmarks.bench_webhook [--seconds 15]

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
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from standin.local_redis import free_port, private_redis
from standin.stack import wait_http

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "github" / "webhooks" / "pull_request.synchronize.json"
SECRET = "bench-secret"
TARGET_P99_MS = 20.0


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


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--seconds", type=int, default=15)
    opts = args.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is required: apt-get install -y wrk", file=sys.stderr)
        return 2
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "deliveries.lua"
        script.write_text(_lua_script(500))
        port = free_port()
        env = dict(os.environ, GITHUB_WEBHOOK_SECRET=SECRET, REDIS_URL=redis_url)
        web = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "web", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_http(url + "/healthz")
            _wrk(url + "/webhook", script, 3, 4, 0)  # warm-up
            flat = _wrk(url + "/webhook", script, opts.seconds, 16, 0)
            # 4 connections each pausing 20 ms between deliveries ≈ 200 deliveries/s
            paced = _wrk(url + "/webhook", script, opts.seconds, 4, 20)
        finally:
            web.terminate()
            web.wait(10)
    body_kb = len(json.dumps(json.loads(FIXTURE.read_text()))) / 1024
    flat_rate = flat["REQS"] / flat["seconds"]
    paced_rate = paced["REQS"] / paced["seconds"]
    p99 = paced["P99_US"] / 1000
    print(f"payload: pull_request.synchronize, {body_kb:.1f} KB, signed; one `plangate web` process; real Redis")
    print(f"flat out: {flat_rate:.0f} deliveries/s (non-2xx: {flat['NON2XX']:.0f})")
    print(
        f"paced:    {paced_rate:.0f} deliveries/s, p50 {paced['P50_US'] / 1000:.2f} ms, p99 {p99:.2f} ms "
        f"(target ≤ {TARGET_P99_MS:.0f} ms: ratio {p99 / TARGET_P99_MS:.2f}×, non-2xx: {paced['NON2XX']:.0f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
