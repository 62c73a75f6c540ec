"""Prometheus collectors that read what workers count in Redis (the keys are core.redis_keys').

Work horses are short-lived, so workers keep their counters in Redis hashes and the web process
turns them into metric families on each scrape.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from core import redis_keys


def _read(conn: redis.Redis, key: str) -> list[tuple[str, float]]:
    try:
        raw = conn.hgetall(key)
    except redis.RedisError:
        return []
    return sorted((k.decode() if isinstance(k, bytes) else str(k), float(v)) for k, v in raw.items())


class GateDecisions(Collector):
    def __init__(self, conn: redis.Redis) -> None:
        self._conn = conn

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "plangate_gate_decisions", "Gate decisions (blocked, approved, refused, voided, ...)", labels=["decision"]
        )
        for decision, value in _read(self._conn, redis_keys.GATE_DECISIONS):
            family.add_metric([decision], value)
        yield family


class GitHubHealth(Collector):
    """Retries, rate limits and recovered jobs, as workers met them."""

    def __init__(self, conn: redis.Redis) -> None:
        self._conn = conn

    def _split(self, key: str, family: CounterMetricFamily) -> CounterMetricFamily:
        for field, value in _read(self._conn, key):
            endpoint, _, reason = field.rpartition("|")
            family.add_metric([endpoint, reason], value)
        return family

    def collect(self) -> Iterator[Metric]:
        yield self._split(
            redis_keys.GITHUB_RETRIES,
            CounterMetricFamily("plangate_github_retries", "GitHub requests repeated", labels=["endpoint", "reason"]),
        )
        yield self._split(
            redis_keys.GITHUB_RATE_LIMITED,
            CounterMetricFamily(
                "plangate_github_rate_limited", "Rate-limited GitHub answers", labels=["endpoint", "kind"]
            ),
        )
        waited = CounterMetricFamily(
            "plangate_github_wait_seconds", "Seconds spent waiting on GitHub rate limits and pacing", labels=["cause"]
        )
        for cause, value in _read(self._conn, redis_keys.GITHUB_WAITED):
            waited.add_metric([cause], value)
        yield waited
        left = GaugeMetricFamily(
            "plangate_github_ratelimit_remaining",
            "The last x-ratelimit-remaining GitHub sent, per installation",
            labels=["installation"],
        )
        for installation, value in _read(self._conn, redis_keys.GITHUB_REMAINING):
            left.add_metric([installation], value)
        yield left
        jobs = CounterMetricFamily(
            "plangate_jobs", "Jobs re-run after a dead worker (recovered), lost to one (abandoned), deferred "
            "by a rate limit, or unreadable (a payload from a version this one cannot read)", labels=["outcome"],
        )  # fmt: skip
        for outcome, value in _read(self._conn, redis_keys.JOBS):
            jobs.add_metric([outcome], value)
        yield jobs
