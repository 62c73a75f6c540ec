"""What `appendfsync always` costs webhook intake against `everysec` (run by hand).

    .venv/bin/python -m benchmarks.bench_aof [--seconds 10] [--rounds 5]

deploy/ runs Redis with an append-only file. `everysec` fsyncs it once a second, so a crash of the
host (not of Redis alone) loses up to a second of writes Redis had already acknowledged: deliveries
GitHub was told were accepted, approvals' follow-up jobs, a held apply's job. `always` fsyncs before
Redis answers. Two private Redis servers (one each way, their files on this machine's disk), one
`plangate web` on each, loaded in turn with bench_webhook's signed deliveries (A/B rounds: this
machine is noisy): flat out (deliveries/s) and paced at ~200/s (p99 ack latency). Then
redis-benchmark of the one write a delivery makes (plumbing/enqueue.py's script, on fresh keys), alone.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import redis

from benchmarks.bench_webhook import _lua_script, _plangate, _wrk
from plumbing.rq_internals import _ENQUEUE_ONCE
from standin.local_redis import private_redis

MODES = ("everysec", "always")


def _redis_benchmark(url: str, requests: int) -> float:
    """Requests/s of the enqueue script on fresh keys, 16 clients, no pipelining."""
    parts = urlsplit(url)
    sha = redis.Redis.from_url(url).script_load(_ENQUEUE_ONCE)
    fields = ["origin", "plangate-plans", "status", "queued", "data", "x" * 600, "timeout", "1800"]
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(parts.port), "-c", "16", "-n", str(requests)]
    argv += ["-a", parts.password or ""]  # the throwaway server's random password
    argv += ["-r", "100000000", "-q", "EVALSHA", sha, "3", "rq:job:__rand_int__", "rq:queue:b", "rq:queues"]
    argv += ["__rand_int__", *fields]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return float(re.findall(r"([\d.]+) requests per second", out)[-1])


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--seconds", type=int, default=10)
    args.add_argument("--rounds", type=int, default=5, help="A/B rounds (flat out, then paced)")
    args.add_argument("--requests", type=int, default=50000, help="redis-benchmark requests per mode")
    opts = args.parse_args()
    for tool in ("wrk", "redis-benchmark"):
        if shutil.which(tool) is None:
            print(f"{tool} is required (Debian: apt-get install -y wrk redis-tools)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        script = Path(tmp) / "deliveries.lua"
        script.write_text(_lua_script(500))
        urls = {m: stack.enter_context(private_redis("--appendonly", "yes", "--appendfsync", m)) for m in MODES}
        webs = {m: stack.enter_context(_plangate(urls[m], "warning")) + "/webhook" for m in MODES}
        for web in webs.values():
            _wrk(web, script, 3, 4, 0)  # warm up
        flat: dict[str, list[float]] = {m: [] for m in MODES}
        p99: dict[str, list[float]] = {m: [] for m in MODES}
        for _ in range(opts.rounds):
            for m in MODES:
                flat[m].append(_wrk(webs[m], script, opts.seconds, 16, 0)["REQS"] / opts.seconds)
                p99[m].append(_wrk(webs[m], script, opts.seconds, 4, 20)["P99_US"] / 1000)
        bench = {m: _redis_benchmark(urls[m], opts.requests) for m in MODES}
    print("appendonly yes; files in a temporary directory on this machine's disk; one plangate web each; wrk")
    for m in MODES:
        rates = ", ".join(f"{r:.0f}" for r in flat[m])
        lat = ", ".join(f"{p:.2f}" for p in p99[m])
        print(f"{m:9} flat out {rates} deliveries/s | p99 at ~200/s {lat} ms | script alone {bench[m]:.0f}/s")
    ratios = [a / e for a, e in zip(flat["always"], flat["everysec"], strict=True)]
    print(f"always / everysec throughput, per round: {', '.join(f'{r:.2f}' for r in ratios)}; ", end="")
    print(f"median {statistics.median(ratios):.2f}×")
    p99_ratio = statistics.median(p99["always"]) / statistics.median(p99["everysec"])
    print(f"p99 at ~200/s, median always / median everysec: {p99_ratio:.2f}×")
    print(f"script alone, always / everysec: {bench['always'] / bench['everysec']:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
