"""Prometheus collectors that read what workers count in Redis (see workers.audit)."""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from workers.audit import COUNTERS_KEY


class GateDecisions(Collector):
    def __init__(self, conn: redis.Redis) -> None:
        self._conn = conn

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "plangate_gate_decisions", "Gate decisions (blocked, approved, refused, voided, ...)", labels=["decision"]
        )
        try:
            counts = self._conn.hgetall(COUNTERS_KEY)
        except redis.RedisError:
            counts = {}
        for decision, value in sorted(counts.items()):
            label = decision.decode() if isinstance(decision, bytes) else str(decision)
            family.add_metric([label], float(value))
        yield family
