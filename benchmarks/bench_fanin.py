"""What a publish waiting on N jobs costs RQ, as one wide join against plangate's tree (run by hand).

    .venv/bin/python -m benchmarks.bench_fanin [--jobs 500] [--rounds 3]

N trivial jobs and a job after all of them (a PR's plans and its publish), run by one forking
`rq.Worker` on a private Redis, alternating: depending on all N directly (RQ reads the status of
every one of the N each time one ends, so O(N²) reads), then through `workers.adapters.queue.fanout.all_ended`
(joins of at most FAN_IN). Prints the median time from the first job's start to the last job's end,
and what each job added over a trivial job's own cost.
"""

from __future__ import annotations

import argparse
import statistics
import time

import redis
from rq import Queue, Worker
from rq.job import Dependency, Job

import workers.jobs  # noqa: F401  (imported before the fork, as `plangate worker` does)
from standin.local_redis import private_redis
from workers.adapters.queue import fanout


def _run(conn: redis.Redis, jobs: int, tree: bool) -> float:
    conn.flushdb()
    queue = Queue("plangate-bench-fanin", connection=conn)
    ids = [queue.enqueue("builtins.len", "x").id for _ in range(jobs)]
    waits = fanout.all_ended(queue, ids) if tree else Dependency(jobs=ids, allow_failure=True)
    last = queue.enqueue("builtins.len", "x", depends_on=waits)
    started = time.perf_counter()
    Worker([queue], connection=conn).work(burst=True, logging_level="WARNING")
    elapsed = time.perf_counter() - started
    assert Job.fetch(last.id, connection=conn).get_status() == "finished", "the last job did not run"
    return elapsed


def main() -> int:
    opts = argparse.ArgumentParser()
    opts.add_argument("--jobs", type=int, default=500)
    opts.add_argument("--rounds", type=int, default=3)
    args = opts.parse_args()
    with private_redis() as url:
        conn = redis.Redis.from_url(url)
        wide, tree = [], []
        for _ in range(args.rounds):
            wide.append(_run(conn, args.jobs, tree=False))
            tree.append(_run(conn, args.jobs, tree=True))
    w, t = statistics.median(wide), statistics.median(tree)
    print(f"{args.jobs} jobs and one after them, one forking worker, {args.rounds} rounds, medians")
    print(f"one wide join:            {w:.1f} s ({w / args.jobs * 1000:.1f} ms a job)")
    print(f"joins of {fanout.FAN_IN} (plangate):   {t:.1f} s ({t / args.jobs * 1000:.1f} ms a job)")
    print(f"saved per job: {(w - t) / args.jobs * 1000:.1f} ms; ratio {w / t:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
