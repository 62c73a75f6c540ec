"""The order of a change's projects from the policy (core.project_order), its jobs in RQ (fanout), the
record of who waits on whom (store.waiting_applies), and what the PR and the apply say about it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis
from rq import Queue
from rq.job import Job, JobStatus

from core.config import parse_config
from core.contract import PLANS_QUEUE, ApplyConversation, Jobs, PushRequest
from core.project_order import merge_waits, with_dependents
from core.projects import Project
from core.render.apply import render_waiting
from core.render.plan import render_apply_order
from plumbing.records import Records
from tests.keys import rsa_pem
from workers.adapters.queue import fanout
from workers.adapters.store import waiting_applies
from workers.adapters.store.waiting_applies import WaitingApply

POLICY = parse_config(
    """version: 1
plan_dependents: true
projects:
  - {name: net, dir: net}
  - {name: cluster, dir: cluster, depends_on: [net]}
  - {name: app, dir: app, depends_on: [cluster]}
  - {name: dns, dir: dns}
"""
)
NET, CLUSTER, APP, DNS = (Project(n, n) for n in ("net", "cluster", "app", "dns"))
PUSH = PushRequest(1, 7, "acme/infra", "https://github.example/acme/infra.git", "main", "a" * 40, "b" * 40)
WHERE = ApplyConversation(number=3, is_pr=True, authors=("alice",), approved_on="c" * 40)


def test_the_policy_orders_the_changed_projects_only() -> None:
    assert merge_waits(POLICY, [APP, DNS, CLUSTER, NET]) == {
        "app": ("cluster",),
        "dns": (),
        "cluster": ("net",),
        "net": (),
    }
    assert merge_waits(POLICY, [APP, NET]) == {"app": (), "net": ()}  # cluster untouched: app goes at once


def test_a_project_borrows_no_order_by_its_name_alone() -> None:
    elsewhere = Project("cluster", "somewhere-else")
    assert merge_waits(POLICY, [NET, elsewhere]) == {"net": (), "cluster": ()}
    other_workspace = Project("cluster", "cluster", "staging")
    assert merge_waits(POLICY, [NET, other_workspace]) == {"net": (), "cluster": ()}


def test_deleted_projects_are_destroyed_dependents_first_by_their_own_order() -> None:
    gone_net = replace(NET, destroy_from="d" * 40)
    gone_cluster = replace(CLUSTER, destroy_from="d" * 40, depends_on=("net",))
    assert merge_waits(parse_config("version: 1\n"), [gone_net, gone_cluster]) == {"net": ("cluster",), "cluster": ()}
    loop = replace(NET, destroy_from="d" * 40, depends_on=("cluster",))  # its old order against the policy's
    with pytest.raises(ValueError, match="cycle"):
        merge_waits(POLICY, [loop, CLUSTER])


def test_plan_dependents_adds_every_dependent_of_a_changed_project() -> None:
    every = [NET, CLUSTER, APP, DNS]
    assert with_dependents(POLICY, every, [NET]) == [NET, CLUSTER, APP]
    assert with_dependents(POLICY, every, [CLUSTER, DNS]) == [CLUSTER, DNS, APP]
    off = replace(POLICY, plan_dependents=False)
    assert with_dependents(off, every, [NET]) == [NET]


def test_each_apply_job_waits_for_the_jobs_of_what_it_depends_on(redis_conn: redis.Redis) -> None:
    waits = merge_waits(POLICY, [APP, DNS, CLUSTER, NET])
    ids = fanout.enqueue_applies(redis_conn, PUSH, [APP, DNS, CLUSTER, NET], WHERE, 60, waits=waits)
    jobs = {job.kwargs["project"].name: job for job in Job.fetch_many(ids, connection=redis_conn) if job}
    assert set(jobs) == {"app", "dns", "cluster", "net"}
    assert jobs["app"].dependency_ids == [jobs["cluster"].id]
    assert jobs["cluster"].dependency_ids == [jobs["net"].id]
    assert jobs["net"].dependency_ids == [] and jobs["dns"].dependency_ids == []
    assert jobs["app"].allow_dependency_failures  # it runs whatever became of cluster, and reads what did
    assert jobs["app"].get_status() == JobStatus.DEFERRED
    assert jobs["app"].kwargs["waits"] == waits and jobs["net"].kwargs["waits"] == waits  # even with nothing before
    deferred = Job.fetch_many(Queue(PLANS_QUEUE, connection=redis_conn).deferred_job_registry.get_job_ids(), redis_conn)
    finish = [j for j in deferred if j is not None and j.func_name == Jobs.FINISH_APPLY]
    assert len(finish) == 1 and sorted(finish[0].dependency_ids) == sorted(ids)
    (again,) = fanout.enqueue_applies(redis_conn, PUSH, [APP], WHERE, 60)  # a held apply run again: none given,
    assert "waits" not in Job.fetch(again, connection=redis_conn).kwargs  # so it reads the push's order as kept


def test_who_waits_on_whom_is_sealed_and_read_back(redis_conn: redis.Redis) -> None:
    records = Records(redis_conn, rsa_pem())
    waits = {"app": ("cluster",), "cluster": ("net",), "net": ()}
    held = WaitingApply(PUSH, replace(APP, depends_on=("cluster",)), WHERE, "cluster", waits)
    waiting_applies.record(records, held)
    waiting_applies.record(records, held)  # said twice (a retried job): one record
    assert waiting_applies.held_by(records, PUSH.repo_id, "cluster") == [held]
    assert waiting_applies.held_by(records, PUSH.repo_id, "net") == []
    key = next(iter(redis_conn.keys("plangate:waiting-applies:*")))
    redis_conn.hset(key, "forged", b"{}")  # not sealed by plangate: counts for nothing
    assert waiting_applies.held_by(records, PUSH.repo_id, "cluster") == [held]
    waiting_applies.forget(records, [held])
    assert waiting_applies.held_by(records, PUSH.repo_id, "cluster") == []


def test_what_the_pr_and_the_apply_say() -> None:
    assert render_apply_order("net → cluster → app") == "Apply order on merge: net → cluster → app"
    said = render_waiting(project="app", sha="b" * 40, holdup="waiting on cluster (failed)", dependency="cluster")
    assert "plangate:apply-waiting" in said and "(project `app`): waiting on cluster (failed)" in said
    assert "once `cluster` applies" in said
