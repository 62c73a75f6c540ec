"""plumbing.run_store: a run page's records read back only as the worker sealed them, for that very run."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import redis

from core import redis_keys
from core.plan import parse_plan
from core.results import ProjectResult
from core.run_plan import run_plan
from core.runs import Attribute, ResourceDiff, RunGate, RunHead, RunPlan, Verdict, run_id, to_plain, valid_id
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.keys import new_private_key_pem
from tests.keys import rsa_pem
from workers.flows import run_pages

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


def test_a_runs_plan_is_masked_again_with_every_projects_secrets_at_publish(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, KEY)
    store = RunStore(records)
    secret = "db-Pa55word-of-net"  # sensitive in net's plan, plain text in app's
    sensitive = {"before": None, "after": {"password": secret}, "after_sensitive": {"password": True}}
    plain = {"before": None, "after": {"input": f"uses {secret}"}, "after_sensitive": {}}

    def result(name: str, change: Mapping[str, object]) -> ProjectResult:
        entry = {"address": f"t.{name}", "mode": "managed", "type": "t", "change": {"actions": ["create"], **change}}
        plan = parse_plan(json.dumps({"format_version": "1.2", "resource_changes": [entry]}))
        return ProjectResult(name, name, "default", "terraform", "a" * 40, plan)

    net, app = result("net", sensitive), result("app", plain)
    source = json.dumps(
        {
            "format_version": "1.2",
            "resource_changes": [
                {"address": "t.app", "mode": "managed", "type": "t", "change": {"actions": ["create"], **plain}}
            ],
        }
    )
    head = _head("job-app")
    store.start(head)
    store.finish(dataclasses.replace(head, ended=1.0, outcome="planned", ok=True), run_plan(app, source=source))
    before = store.read(head.id)
    assert before is not None and before.plan is not None and secret in json.dumps(to_plain(before.plan))
    run_pages.mask_like_the_comment(records, {app.identity: head.id}, [net, app], ())
    after = store.read(head.id)
    assert after is not None and after.plan is not None
    shown = json.dumps(to_plain(after.plan))
    assert secret not in shown and "uses (sensitive value)" in shown
