"""How long `GET /` takes with a full run log (run by hand): issue #33 asks for a few hundred ms at 1,000 runs.

    .venv/bin/python -m benchmarks.bench_status_page [--runs 1000] [--renders 30]

Records `--runs` entries of realistic shape into a private Redis through plumbing.runlog.record_run
(several repositories; PRs planned over several pushes across their projects, approved, merged or closed;
applies per project, some failed or waiting; hourly drift checks, some drifted; every entry but a close
names a run page), then times the whole request through Starlette's TestClient and the app `plangate web`
serves (the session check, the one LRANGE, the queue and worker reads, grouping, rendering): as the status
token (every repository) and as a person signed in who may read two of the repositories; and, without
HTTP, the function the route runs in its thread pool (reads and renderer). `GET /healthz` through the same
client is the baseline of what HTTP alone costs here. Prints the median and p95 over `--renders` calls,
after one warm-up each.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import redis
from starlette.testclient import TestClient

from bot import session, status_page
from bot.app import create_app
from bot.status_auth import EVERYTHING, Access
from plumbing import settings
from plumbing.runlog import KEEP, RUNS_KEY, record_run
from standin.local_redis import private_redis

REPOS = ("acme/network", "acme/platform", "acme/data", "acme/edge", "acme/billing", "acme/identity")
PROJECTS = ("network", "dns", "cluster", "db", "cache", "iam", "queues", "cdn")
READS = ["acme/network", "acme/billing"]
TOKEN = "bench-status-token-0123456789"
SECRET = "c" * 40
WAITS = "1 to destroy — comment /approve-destroy"


def _sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


def _run_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(120):030x}"[:24]


def _pull(rng: random.Random, repo: str, number: int, at: float) -> list[dict[str, object]]:
    """One PR's entries, oldest first: pushes planned across its projects, maybe an approval, then a close and
    (when merged) an apply per project; the last few PRs of a repository stay open."""
    projects = rng.sample(PROJECTS, rng.randint(1, 3))
    destroys = rng.random() < 0.3
    out: list[dict[str, object]] = []
    for _ in range(rng.randint(1, 4)):
        sha = _sha(rng)
        gate, said = ("failure", WAITS) if destroys else ("success", "No destroys")
        if rng.random() < 0.05:
            gate, said = "failure", f"Cannot check destroys: 1 plans failed: {projects[0]}"
        run = _run_id(rng)
        for project in projects:
            out.append(
                {"kind": "plan", "repo": repo, "number": number, "project": project, "sha": sha, "gate": gate,
                 "gate_description": said, "summary": "2 to add, 1 to change, 1 to destroy", "run": run,
                 "url": f"https://github.com/{repo}/pull/{number}#issuecomment-{rng.getrandbits(30)}", "at": at}
            )  # fmt: skip
        at += rng.uniform(60, 3600)
    if destroys and rng.random() < 0.7:
        out.append(
            {"kind": "approval", "repo": repo, "number": number, "project": ", ".join(projects), "sha": sha,
             "gate": "success", "gate_description": "1 destroy approved by @bob", "approver": "bob",
             "summary": "1 destroy approved", "run": _run_id(rng), "at": at}
        )  # fmt: skip
    return out


def _closing(rng: random.Random, repo: str, number: int, sha: str, at: float) -> list[dict[str, object]]:
    merged = rng.random() < 0.8
    out: list[dict[str, object]] = [
        {"kind": "closed", "repo": repo, "number": number, "sha": sha, "result": "merged" if merged else "closed"}
    ]
    if merged:
        for project in rng.sample(PROJECTS, rng.randint(1, 2)):
            result = rng.choices(["applied", "apply failed", "waiting on dns (failed)"], [0.85, 0.1, 0.05])[0]
            out.append(
                {"kind": "apply", "repo": repo, "number": number, "project": project, "sha": _sha(rng),
                 "result": result, "gate": "success" if result == "applied" else "failure", "approver": "bob",
                 "summary": "1 to add, 0 to change, 0 to destroy", "run": _run_id(rng)}
            )  # fmt: skip
    for entry in out:
        entry["at"] = at
    return out


def history(runs: int, seed: int = 33) -> list[dict[str, object]]:
    """`runs` entries, oldest first, over the last few days."""
    rng = random.Random(seed)
    at = time.time() - 5 * 86400
    out: list[dict[str, object]] = []
    numbers = dict.fromkeys(REPOS, 100)
    while len(out) < runs:
        repo = rng.choice(REPOS)
        numbers[repo] += 1
        pull = _pull(rng, repo, numbers[repo], at)
        out += pull
        at = float(pull[-1]["at"]) + rng.uniform(60, 1800)  # type: ignore[arg-type]
        if rng.random() < 0.85:
            out += _closing(rng, repo, numbers[repo], str(pull[-1]["sha"]), at)
        if rng.random() < 0.3:
            for project in rng.sample(PROJECTS, 3):
                drifted = rng.random() < 0.15
                out.append(
                    {"kind": "drift", "repo": repo, "project": project, "sha": _sha(rng), "at": at,
                     "number": rng.randint(1, 99) if drifted else None, "result": "drift" if drifted else "clean",
                     "gate": "failure" if drifted else "success", "run": _run_id(rng)}
                )  # fmt: skip
        at += rng.uniform(60, 600)
    return out[-runs:]


def _spread(times: list[float]) -> tuple[float, float]:
    """(median, p95) in ms."""
    times = sorted(t * 1000 for t in times)
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def _requests(client: TestClient, path: str, headers: dict[str, str], renders: int) -> tuple[float, float, int]:
    """(median ms, p95 ms, body bytes) of `renders` requests after one warm-up."""
    first = client.get(path, headers=headers)
    assert first.status_code == 200, first.text[:300]
    times = []
    for _ in range(renders):
        started = time.perf_counter()
        response = client.get(path, headers=headers)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200
    return (*_spread(times), len(first.content))


def _snapshots(conn: redis.Redis, access: Access, renders: int) -> tuple[float, float, int]:
    """The same for what the route runs in its thread pool: the Redis reads and the renderer, no HTTP."""
    page = status_page._snapshot(conn, access, "/auth/signout")
    times = []
    for _ in range(renders):
        started = time.perf_counter()
        status_page._snapshot(conn, access, "/auth/signout")
        times.append(time.perf_counter() - started)
    return (*_spread(times), len(page.encode()))


def main() -> int:
    opts = argparse.ArgumentParser()
    opts.add_argument("--runs", type=int, default=KEEP)
    opts.add_argument("--renders", type=int, default=30)
    args = opts.parse_args()
    with private_redis() as url:
        conn = redis.Redis.from_url(url)
        for entry in history(args.runs):
            record_run(conn, **entry)
        print(f"run log: {conn.llen(RUNS_KEY)} entries (KEEP {KEEP}), {conn.memory_usage(RUNS_KEY)} bytes in Redis")
        env = {
            "GITHUB_WEBHOOK_SECRET": "s",
            "REDIS_URL": url,
            "PLANGATE_STATUS_TOKEN": TOKEN,
            "GITHUB_APP_ID": "4242",
            "GITHUB_CLIENT_ID": "Iv1.0123456789abcdef",
            "GITHUB_CLIENT_SECRET": SECRET,
        }
        reader = Access("alice", frozenset(READS))
        found = {
            "renderer + reads, everything": _snapshots(conn, EVERYTHING, args.renders),
            f"renderer + reads, reader of {len(READS)}": _snapshots(conn, reader, args.renders),
        }
        with TestClient(create_app(settings.load(env))) as client:
            found["GET /healthz (the HTTP baseline)"] = _requests(client, "/healthz", {}, args.renders)
            found["GET / with the token"] = _requests(client, "/", {"Authorization": f"Bearer {TOKEN}"}, args.renders)
            cookie = session.start(conn, session.session_key(SECRET), "alice", READS, time.time())
            client.cookies.set(session.SESSION_COOKIE, cookie)
            found[f"GET / signed in, reader of {len(READS)}"] = _requests(
                client, "/", {"Accept": "text/html"}, args.renders
            )
    for what, (median, p95, size) in found.items():
        print(f"{what}: median {median:.1f} ms, p95 {p95:.1f} ms, {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
