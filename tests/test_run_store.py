"""plumbing.run_store: a run page's records read back only as the worker sealed them, for that very run."""

from __future__ import annotations

import dataclasses
from typing import Any

import redis

from core import redis_keys
from core.runs import Attribute, ResourceDiff, RunGate, RunHead, RunPlan, Verdict, run_id, valid_id
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.keys import new_private_key_pem
from tests.keys import rsa_pem

KEY = rsa_pem()


def _head(job: str = "job-1", kind: str = "plan") -> RunHead:
    return RunHead(
        id=run_id(job, "app|default|infra"),
        kind=kind,
        repo="acme/infra",
        repo_id=7,
        sha="a" * 40,
        project="app",
        dir="infra",
        workspace="default",
        number=3,
        started=100.0,
    )


def test_a_run_reads_back_whole_and_its_id_is_stable_per_job_and_project() -> None:
    assert run_id("job-1", "app") == run_id("job-1", "app") != run_id("job-2", "app") != run_id("job-1", "net")
    assert valid_id(run_id("j", "p")) and not valid_id("../x") and not valid_id("x" * 65) and not valid_id("")


def test_head_plan_gate_and_lines_round_trip(redis_conn: redis.Redis) -> None:
    store = RunStore(Records(redis_conn, KEY))
    head = _head()
    store.start(head)
    store.append(head, ["Initializing...", "Plan: 1 to add"])
    plan = RunPlan(
        (ResourceDiff("terraform_data.x", "delete", True, attributes=(Attribute("input", '"a"', None),)),),
        omitted=2,
    )
    ended = dataclasses.replace(head, ended=130.0, outcome="planned", ok=True, summary="1 to destroy")
    store.finish(ended, plan)
    gate = RunGate("failure", "1 destroy waiting", (Verdict("terraform_data.x", "destroy", "waiting", "needs 1"),))
    store.set_gate([head.id, "absent-run-id-0000000000"], gate)
    stored = store.read(head.id)
    assert stored is not None
    assert stored.head == ended and stored.plan == plan and stored.gate == gate
    assert [line.text for line in stored.lines] == ["Initializing...", "Plan: 1 to add"]
    after = store.lines_after(head.id, stored.lines[0].id)
    assert [line.text for line in after] == ["Plan: 1 to add"]
    assert store.lines_after(head.id, stored.lines[1].id) == []
    assert not redis_conn.exists(redis_keys.run("absent-run-id-0000000000"))
    assert [h.id for h in store.siblings(7, "a" * 40)] == [head.id]
    assert 0 < redis_conn.ttl(redis_keys.run(head.id)) <= redis_keys.RUN_DEFAULT_TTL


def test_a_run_started_again_starts_with_empty_output(redis_conn: redis.Redis) -> None:
    store = RunStore(Records(redis_conn, KEY))
    head = _head()
    store.start(head)
    store.append(head, ["first attempt"])
    store.start(head)
    store.append(head, ["second attempt"])
    stored = store.read(head.id)
    assert stored is not None and [line.text for line in stored.lines] == ["second attempt"]


def test_forged_or_moved_records_and_lines_are_not_shown(redis_conn: redis.Redis) -> None:
    store = RunStore(Records(redis_conn, KEY))
    head, other = _head(), _head("job-2")
    store.start(head)
    store.start(other)
    store.append(other, ["other run's line"])
    out = redis_keys.run_output(head.id)
    redis_conn.xadd(out, {"l": "No changes. (forged)"})
    entries: Any = redis_conn.xrange(redis_keys.run_output(other.id))
    redis_conn.xadd(out, entries[0][1])  # a valid line of another run
    store.append(head, ["real"])
    stored = store.read(head.id)
    assert stored is not None and [line.text for line in stored.lines] == ["real"]
    redis_conn.hset(redis_keys.run(head.id), "gate", '{"state": "success", "description": "approved"}')
    stored = store.read(head.id)
    assert stored is not None and stored.gate is None
    redis_conn.hset(redis_keys.run(head.id), "head", "{}")
    assert store.read(head.id) is None and store.head(head.id) is None
    assert RunStore(Records(redis_conn, new_private_key_pem())).read(other.id) is None  # another App key
