"""A PR of several projects end to end (web, an RQ worker, terraform in the sandbox): its projects are
planned in batches, a project busy elsewhere waits its turn in a job of its own while the publish waits
for it, and the next push carries the batch's plans forward."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.rate_limit import RateLimitRegistry

from core.contract import PLANS_QUEUE, Jobs
from core.projects import Project
from core.runs import run_id
from plumbing import settings as settings_module
from plumbing.job_options import project_rate_limit
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.stack import running_stack
from tests.e2e import bot_bodies, finished_jobs, planned, planned_dirs, plans_ended, status
from tests.jobs.holders import running_job
from workers.adapters.queue import fanout, slots

pytestmark = pytest.mark.e2e

NAMES = ["p1", "p2", "p3", "p4"]  # on one worker: p1 and p2 in a batch, then p3 and p4 in a job each


def _one(value: str) -> str:
    return f'resource "terraform_data" "one" {{\n  input = "{value}"\n}}\n'


def _continuations(conn: redis.Redis) -> list[str]:
    """Publish jobs waiting for plans that a batch handed on."""
    return [i for i in Queue(PLANS_QUEUE, connection=conn).deferred_job_registry.get_job_ids() if i.endswith("-then")]


def test_a_batch_hands_a_busy_project_on_the_publish_waits_for_it_and_a_push_carries_them(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    assert fanout.batch_sizes(len(NAMES), 1) == [2, 1, 1]
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {f"{n}/main.tf": _one("1") for n in NAMES})
        busy = project_rate_limit(repo.id, Project("p2", "p2"))
        applying = running_job(redis_conn, "an apply of p2")  # another job of p2 runs: it holds the slot
        assert slots.take(redis_conn, busy, applying.id)

        pr = gh.open_pr(repo, "all", "alice", "Change every project", {f"{n}/main.tf": _one("2") for n in NAMES})
        (waiting,) = stack.wait_for("p2's own job", RateLimitRegistry(busy.key, redis_conn).get_rate_limited_job_ids)
        assert Job.fetch(waiting, connection=redis_conn).func_name == Jobs.PLAN_PROJECT
        stack.wait_for("the publish, waiting for p2", lambda: _continuations(redis_conn))
        assert gh.reports(repo, pr.head_sha)["plangate/plan"].state == "pending"

        slots.give_back(redis_conn, busy, applying.id)
        assert planned(stack, repo, pr.head_sha) == {"plangate/plan": "success", "plangate/destroy": "success"}
        head = pr.head_sha
        jobs = plans_ended(stack, redis_conn, head, 4)
        funcs = sorted(str(j.func_name) for j in jobs)
        assert funcs == [Jobs.PLAN_PROJECT] * 3 + [Jobs.PLAN_PROJECTS]
        by_job = sorted(planned_dirs(j) for j in jobs)
        assert by_job == [["p1"], ["p2"], ["p3"], ["p4"]]  # p2 by its own job, not by the batch too
        (comment,) = bot_bodies(stack, repo, pr.number)
        assert all(f"`{n}`" in comment for n in NAMES) and "died" not in comment

        second = gh.push_pr(pr, {"p3/main.tf": _one("3")})
        assert planned(stack, repo, second)["plangate/plan"] == "success"
        assert [d for j in plans_ended(stack, redis_conn, second, 1) for d in planned_dirs(j)] == ["p3"]
        (comment,) = bot_bodies(stack, repo, pr.number)
        assert comment.count(f"carried from `{head[:7]}`") == 3, comment  # p1 and p2 (the batch's), p4
        assert all(f"`{n}`" in comment for n in NAMES) and "expired" not in comment and "died" not in comment


def test_a_merge_groups_checks_come_from_its_batches(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    names = NAMES[:3]  # on one worker: p1 and p2 in a batch, p3 in a job of its own
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {f"{n}/main.tf": _one("1") for n in names})
        pr = gh.open_pr(repo, "all", "alice", "Change every project", {f"{n}/main.tf": _one("2") for n in names})
        planned(stack, repo, pr.head_sha)
        group = gh.queue_merge_group(repo, [pr])
        assert status(stack, repo, group.head_sha, "plangate/destroy", "success")
        assert status(stack, repo, group.head_sha, "plangate/plan", "success")
        (batch,) = finished_jobs(redis_conn, group.head_sha, (Jobs.PLAN_PROJECTS,))
        assert sorted(planned_dirs(batch)) == ["p1", "p2"]
        # each project's plan is a run of the job that planned it (a batch or a job of its own), its output
        # masked with the patterns the group's dispatch read
        runs = RunStore(Records(redis_conn, settings_module.load(stack.env).private_key or ""))
        heads = runs.siblings(repo.id, group.head_sha)
        assert sorted((h.project, h.kind, h.number, h.outcome) for h in heads) == [
            (n, "merge-group", None, "planned") for n in names
        ]
        batch_runs = {run_id(batch.id, Project(n, n).identity) for n in ("p1", "p2")}
        assert batch_runs <= {h.id for h in heads}
        for head in heads:
            stored = runs.read(head.id)
            assert stored is not None and "Plan: 1 to add, 0 to change, 0 to destroy." in [x.text for x in stored.lines]
