"""After a close, a job does what the webhook once did itself: drop the PR's entries from the records
other PRs read, mark a merge group gone, and cancel the plan that still waits in its queue."""

from __future__ import annotations

from pathlib import Path

import redis
from rq import Queue
from rq.job import Job, JobStatus

from core import redis_keys
from core.contract import PLANS_QUEUE, GroupRequest, Jobs
from core.contract_cleanup import GroupGone, PullClosed
from plumbing import settings as settings_module
from plumbing.records import Records
from plumbing.runlog import recent_runs
from tests.keys import rsa_pem
from workers.adapters.github.auth import TokenCache
from workers.adapters.store import gates as gate_store
from workers.adapters.store import pr_plans
from workers.adapters.terraform.sandbox import Sandbox
from workers.context import WorkerContext
from workers.flows import cleanup, merge_queue

SHA = "a" * 40


def _ctx(tmp_path: Path, conn: redis.Redis) -> WorkerContext:
    key = rsa_pem()
    tokens = TokenCache(conn, app_id=1, private_key=key, api_url="http://x")
    loaded = settings_module.load({"PLANGATE_WORKDIR": str(tmp_path)})
    return WorkerContext(loaded, conn, tokens, Records(conn, key), Sandbox())


def _queued_plan(conn: redis.Redis, job_id: str) -> Job:
    return Queue(PLANS_QUEUE, connection=conn).enqueue(Jobs.PLAN_PR, job_id=job_id)


def test_a_closed_pr_is_replanned_no_more_holds_no_other_pr_and_its_queued_plan_is_cancelled(
    tmp_path: Path, redis_conn: redis.Redis
) -> None:
    ctx = _ctx(tmp_path, redis_conn)
    for number in (7, 8):  # two PRs at one commit, both planned
        pr_plans.remember(ctx.records, 1, pr_plans.PlannedPR(number, SHA, "alice", False, ["infra"]))
        gate_store.gate_at_commit(ctx.records, 1, SHA, number, passed=False)
    plan = _queued_plan(redis_conn, "plan-1-7-" + SHA)
    closed = PullClosed(1, 7, SHA, plan.id, "2026-01-01T00:00:00Z")
    assert cleanup.pull_closed(ctx, closed) == "cancelled"
    assert plan.get_status(refresh=True) == JobStatus.CANCELED
    assert Queue(PLANS_QUEUE, connection=redis_conn).job_ids == []
    assert [p.number for p in pr_plans.affected(ctx.records, 1, {"infra"}, None)] == [8]
    assert set(redis_conn.hkeys(redis_keys.sha_gates(1, SHA))) == {b"8"}
    assert gate_store.gate_at_commit(ctx.records, 1, SHA, 8, passed=False) == []  # #7 holds #8 no more
    assert cleanup.pull_closed(ctx, closed) == "plan already running or done"  # redone: nothing more to do


def test_a_closed_pr_is_recorded_in_the_run_log_merged_or_not(tmp_path: Path, redis_conn: redis.Redis) -> None:
    """What the status page reads to list the PR as open no more (bot.gate_states)."""
    ctx = _ctx(tmp_path, redis_conn)
    cleanup.pull_closed(ctx, PullClosed(1, 7, SHA, "plan-1-7-" + SHA, "t1", repo="acme/infra", merged=True))
    cleanup.pull_closed(ctx, PullClosed(1, 8, SHA, "plan-1-8-" + SHA, "t2", repo="acme/infra"))
    found = [{k: r[k] for k in ("kind", "repo", "number", "sha", "result")} for r in recent_runs(redis_conn, 5)]
    assert found == [
        {"kind": "closed", "repo": "acme/infra", "number": 8, "sha": SHA, "result": "closed"},
        {"kind": "closed", "repo": "acme/infra", "number": 7, "sha": SHA, "result": "merged"},
    ]


def test_a_close_queued_before_the_payload_named_its_repository_records_nothing(
    tmp_path: Path, redis_conn: redis.Redis
) -> None:
    """A run-log entry without a repository would be listed under no repository; the PR then shows open
    until its entries leave the log, as before."""
    cleanup.pull_closed(_ctx(tmp_path, redis_conn), PullClosed(1, 7, SHA, "plan-1-7-" + SHA, ""))
    assert recent_runs(redis_conn, 5) == []


def test_a_closed_pr_without_a_queued_plan_only_drops_its_records(tmp_path: Path, redis_conn: redis.Redis) -> None:
    ctx = _ctx(tmp_path, redis_conn)
    pr_plans.remember(ctx.records, 1, pr_plans.PlannedPR(7, SHA, "alice", False, ["infra"]))
    assert cleanup.pull_closed(ctx, PullClosed(1, 7, SHA, "plan-1-7-" + SHA, "")) == "nothing queued"
    assert pr_plans.affected(ctx.records, 1, {"infra"}, None) == []


def test_a_group_the_queue_dropped_is_gone_and_its_queued_plan_cancelled(
    tmp_path: Path, redis_conn: redis.Redis
) -> None:
    ctx = _ctx(tmp_path, redis_conn)
    group = GroupRequest(1, 1, "acme/infra", "https://x/acme/infra.git", "main", SHA, "gh-readonly-queue/main/x")
    assert not merge_queue.gone(ctx, group)
    plan = _queued_plan(redis_conn, "mq-1-" + SHA)
    assert cleanup.group_gone(ctx, GroupGone(1, SHA, plan.id)) == "cancelled"
    assert merge_queue.gone(ctx, group)
    assert 0 < redis_conn.ttl(redis_keys.mq_gone(1, SHA)) <= redis_keys.MQ_GONE_TTL
    plan.set_status(JobStatus.STARTED)
    started = cleanup.group_gone(ctx, GroupGone(1, SHA, plan.id))
    assert started == "group plan already running or done: its results are dropped"
