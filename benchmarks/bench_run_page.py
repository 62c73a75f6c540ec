"""Benchmark: `GET /runs/{id}` of a large run (run by hand, never by `make test`).

    .venv/bin/python -m benchmarks.bench_run_page [--resources 2000] [--lines 5000] [--rounds 20]

Writes one finished run into a private Redis the way a worker does (plumbing.run_store.RunStore, sealed
with a fresh App key): `--resources` changed resources of mixed actions (a fifth each destroy, replace,
update, create, read; ~8 attributes each, every tenth value 400 characters long, so folded), a gate
verdict per destroy, and `--lines` lines of output coloured as terraform colours them. Then times the
whole GET through Starlette's TestClient with PLANGATE_STATUS_TOKEN, and apart from it the two halves the
route runs: the Redis read (RunStore.read + siblings, unsealing every record and line) and the render
(bot.run_view + templates/run.html). Prints the median and p95 wall time of each over `--rounds`, the median CPU time of
the process (the steadier figure when the machine is shared), and the page size.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import redis
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.testclient import TestClient

from bot.app import create_app
from bot.run_view import run_view
from core.runs import Attribute, ResourceDiff, RunGate, RunHead, RunPlan, Verdict, run_id
from plumbing import settings
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.keys import new_private_key_pem
from standin.local_redis import private_redis

TOKEN = "bench-run-page-token-0123456789"
ACTIONS = ("delete", "replace", "update", "create", "read")
ESC = "\x1b"


def _attributes(i: int, action: str) -> tuple[Attribute, ...]:
    found = []
    for n in range(8):
        value = f'"{"x" * 400}"' if (i + n) % 10 == 0 else f'"value-{i}-{n}"'
        before = None if action == "create" else value
        after = None if action == "delete" else ("(known after apply)" if n == 0 else value + "2")
        found.append(Attribute(f"tags.key{n}", before, after))
    return tuple(found)


def _plan(resources: int) -> RunPlan:
    drawn = []
    for i in range(resources):
        action = ACTIONS[i % len(ACTIONS)]
        address = f'module.m{i % 17}.aws_instance.web["{i}"]'
        drawn.append(ResourceDiff(address, action, action in ("delete", "replace"), None, None, _attributes(i, action)))
    drawn.sort(key=lambda r: (not r.gated, ACTIONS.index(r.action)))
    return RunPlan(tuple(drawn))


def _lines(count: int) -> list[str]:
    colours = (
        f"  {ESC}[1m# aws_instance.web[%d]{ESC}[0m will be {ESC}[1m{ESC}[31mdestroyed{ESC}[0m",
        f'      {ESC}[32m+{ESC}[0m{ESC}[0m ami = "ami-%d"',
        f"{ESC}[0m{ESC}[1maws_instance.web[%d]: Refreshing state...{ESC}[0m",
        '      ~ tags = { "n" = "%d" } -> (known after apply)',
    )
    return [colours[i % len(colours)] % i for i in range(count)]


def _time(rounds: int, work: Callable[[], object]) -> tuple[float, float, float]:
    """Median and p95 wall time, and median CPU time of this process (steadier on a shared machine)."""
    took, cpu = [], []
    for _ in range(rounds):
        began, began_cpu = time.perf_counter(), time.process_time()
        work()
        took.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, round(0.95 * (len(took) - 1)))], statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resources", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    key = new_private_key_pem()
    with private_redis() as url:
        store = RunStore(Records(redis.Redis.from_url(url), key))
        head = RunHead(run_id("bench", "app"), "plan", "acme/infra", 7, "a" * 40, "app", "infra", "default", 3)
        store.start(head)
        lines = _lines(args.lines)
        for at in range(0, len(lines), 500):
            store.append(head, lines[at : at + 500])
        plan = _plan(args.resources)
        ended = RunHead(**{**head.__dict__, "ended": 60.0, "outcome": "planned", "ok": True, "summary": "bench"})
        store.finish(ended, plan)
        verdicts = tuple(Verdict(r.address, "destroy", "waiting", "needs 1") for r in plan.resources if r.gated)
        store.set_gate([head.id], RunGate("failure", "destroys waiting", verdicts))

        env = Environment(loader=FileSystemLoader(Path("bot/templates")), autoescape=select_autoescape())
        stored = store.read(head.id)
        assert stored is not None

        def render() -> str:
            view = run_view(stored, [ended], time.time(), "", "https://github.com")
            return env.get_template("run.html").render(page=view, static_url="/static", home_url="/")

        env_vars = {"GITHUB_WEBHOOK_SECRET": "s", "REDIS_URL": url, "GITHUB_APP_PRIVATE_KEY": key}
        app = create_app(settings.load({**env_vars, "PLANGATE_STATUS_TOKEN": TOKEN}))
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        with TestClient(app) as client:
            page = client.get(f"/runs/{head.id}", headers=bearer)
            assert page.status_code == 200, page.text[:200]
            whole = _time(args.rounds, lambda: client.get(f"/runs/{head.id}", headers=bearer))
        read = _time(args.rounds, lambda: (store.read(head.id), store.siblings(7, "a" * 40)))
        drawn = _time(args.rounds, render)
    size = len(page.content) / 1e6
    print(f"{args.resources} resources, {args.lines} lines, {args.rounds} rounds; page {size:.1f} MB")
    for name, (median, p95, cpu) in (("GET /runs/{id}", whole), ("  read (Redis, unseal)", read), ("  render", drawn)):
        print(f"{name:<24} median {median * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   CPU median {cpu * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
