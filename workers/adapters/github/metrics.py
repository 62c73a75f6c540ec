"""What workers count about talking to GitHub, kept in Redis for `/metrics` and the status page.

Each worker process is short-lived (a work horse per job), so counters live in Redis hashes the web
process reads (bot.metrics), like the gate decisions of workers.adapters.store.audit.
"""

from __future__ import annotations

import redis

from core import redis_keys

RETRIES = redis_keys.GITHUB_RETRIES
RATE_LIMITED = redis_keys.GITHUB_RATE_LIMITED
WAITED = redis_keys.GITHUB_WAITED
REMAINING = redis_keys.GITHUB_REMAINING
JOBS = redis_keys.JOBS
LIMITED_PREFIX = redis_keys.RATE_LIMITED_PREFIX


class Recorder:
    """Best effort: a Redis hiccup while counting must not fail the job that is counted."""

    def __init__(self, conn: redis.Redis) -> None:
        self._conn = conn

    def _do(self, *commands: tuple[str, tuple[object, ...]]) -> None:
        try:
            with self._conn.pipeline(transaction=False) as pipe:
                for name, args in commands:
                    if name == "set":  # (key, value, seconds)
                        pipe.set(str(args[0]), str(args[1]), ex=int(str(args[2])))
                    else:
                        getattr(pipe, name)(*args)
                pipe.execute()
        except redis.RedisError:
            pass

    def retried(self, endpoint: str, reason: str) -> None:
        self._do(("hincrby", (RETRIES, f"{endpoint}|{reason}", 1)))

    def limited(self, installation_id: int | None, endpoint: str, kind: str, wait: float) -> None:
        commands: list[tuple[str, tuple[object, ...]]] = [
            ("hincrby", (RATE_LIMITED, f"{endpoint}|{kind}", 1)),
            ("hincrbyfloat", (WAITED, "rate-limit", wait)),
        ]
        if installation_id is not None:
            commands.append(("set", (f"{LIMITED_PREFIX}{installation_id}", kind, max(1, int(wait)))))
        self._do(*commands)

    def paced(self, waited: float) -> None:
        self._do(("hincrbyfloat", (WAITED, "pacing", waited)))

    def remaining(self, installation_id: int, left: int) -> None:
        self._do(("hset", (REMAINING, str(installation_id), left)))

    def job(self, outcome: str) -> None:
        self._do(("hincrby", (JOBS, outcome, 1)))
