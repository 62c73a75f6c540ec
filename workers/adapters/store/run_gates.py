"""The gate's verdicts written to run pages (plumbing.run_store), after the gate's own work is done.

A page is a view of the gate: the verdict was already reported to GitHub and recorded. So a Redis error
while writing it is logged, never the end of the job that decided the gate (an approval whose reply,
holding its sealed marker, is still to be posted)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping

import redis

from core.runs import RunGate
from plumbing.records import Records
from plumbing.run_store import RunStore

log = logging.getLogger("plangate.runs")


def mask_plans(records: Records, runs: Iterable[str], mask: Callable[[str], str]) -> None:
    """Each run's drawn plan masked again with `mask` (a PR comment's: every project's secrets)."""
    store = RunStore(records)
    try:
        for run in runs:
            store.mask_plan(run, mask)
    except redis.RedisError as exc:
        log.warning(json.dumps({"runs": sorted(runs), "plan": "not masked again", "error": type(exc).__name__}))


def set_gates(records: Records, gates: Mapping[str, RunGate]) -> None:
    """run id → its gate, for each run whose record still exists."""
    store = RunStore(records)
    try:
        for run, gate in gates.items():
            store.set_gate([run], gate)
    except redis.RedisError as exc:
        log.warning(json.dumps({"runs": sorted(gates), "gate": "not written", "error": type(exc).__name__}))
