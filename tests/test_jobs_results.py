"""How the publish reads the plans it carries forward (workers.flows.pr_runner.carried_plans): from RQ's
results, each job read once however many of the PR's projects it planned, and an expired one named as such."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.job import Job

from core.contract import PlanRequest
from core.inputs import LastPlan
from core.projects import Project
from workers.context import WorkerContext
from workers.flows import pr_runner
from workers.flows.carry import Carried

REQUEST = PlanRequest(1, 2, "acme/infra", "https://example.test/acme/infra.git", "main", pr=3, sha="b" * 40, author="a")


def test_carried_plans_are_read_once_per_job_and_an_expired_one_says_so(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = Queue("plangate-test-results", connection=redis_conn)
    batch = queue.enqueue("tests.jobs.made.batch", ["p1", "p2", "p3"])
    lone = queue.enqueue("tests.jobs.made.lone", "p4")
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    reads: list[str] = []
    real = Job.return_value

    def counted(job: Job, refresh: bool = False) -> object:
        reads.append(job.id)
        return real(job, refresh)

    monkeypatch.setattr(Job, "return_value", counted)
    carried = [
        Carried(Project(n, n), LastPlan("f", job, "c" * 40))
        for n, job in [("p3", batch.id), ("p1", batch.id), ("p4", lone.id), ("p5", "gone"), ("p2", batch.id)]
    ]
    ctx = cast(WorkerContext, SimpleNamespace(redis=redis_conn))  # all that reading needs
    shown, _ = pr_runner.carried_plans(ctx, REQUEST, carried)

    assert [r.name for r in shown] == ["p3", "p1", "p4", "p5", "p2"]
    assert sorted(reads) == sorted([batch.id, lone.id])  # not once per project
    assert all(r.sha == REQUEST.sha for r in shown)  # each shown at the head
    assert [r.carried_from for r in shown] == ["c" * 40, "c" * 40, "c" * 40, None, "c" * 40]
    assert shown[3].error and "has expired" in shown[3].error
