"""The jobs a finished step leads to, beyond a PR's plans (fanout.py): a command's re-plan, re-apply or
drift check or `/accept-drift`, a drift check's per-project jobs, the re-plans of lost work, and what became of a
push's apply jobs. Each under the options its kind has (plumbing.job_options)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis
from rq import Queue
from rq.job import Job, JobStatus

from core.contract import PLANS_QUEUE, CommandRequest, Jobs, PlanRequest, PushRequest, job_id
from core.drift_schedule import DriftTarget
from core.projects import Project
from plumbing.enqueue import enqueue_once
from plumbing.job_options import GAVE_UP, OPTIONS, project_rate_limit


def _plans(conn: redis.Redis) -> Queue:
    return Queue(PLANS_QUEUE, connection=conn)


def plan_again(conn: redis.Redis, request: PlanRequest) -> None:
    """A PR planned again (its id names what asked: a command, a re-run, a recovery), once per id."""
    plan = job_id("plan", request.repo_id, request.pr, request.sha, request.trigger)
    enqueue_once(_plans(conn), Jobs.PLAN_PR, plan, request)


def apply_again(conn: redis.Redis, push: PushRequest, asked_by: int | str) -> None:
    """A push's whole apply run again (a `/plan` on a merged PR), once per asking comment or button."""
    enqueue_once(_plans(conn), Jobs.APPLY_PUSH, job_id("push", push.repo_id, push.after, "rerun", asked_by), push)


def check_drift(conn: redis.Redis, target: DriftTarget) -> None:
    _plans(conn).enqueue(Jobs.DRIFT_CHECK, kwargs={"target": target}, **OPTIONS[Jobs.DRIFT_CHECK].enqueue_args())


def drift_projects(
    conn: redis.Redis, target: DriftTarget, sha: str, projects: Sequence[Project], tf_timeout: float
) -> list[str]:
    """One drift job per project, each waiting for its project's slot; their ids."""
    options = OPTIONS[Jobs.DRIFT_PROJECT]
    return [
        _plans(conn)
        .enqueue(
            Jobs.DRIFT_PROJECT,
            kwargs={"target": target, "project": project, "sha": sha},
            **options.enqueue_args(tf_timeout=tf_timeout, rate_limit=project_rate_limit(target.repo_id, project)),
        )
        .id
        for project in projects
    ]


def accept_drift(
    conn: redis.Redis, request: CommandRequest, target: DriftTarget, project: Project, tf_timeout: float
) -> bool:
    """`/accept-drift` in the drift issue of `project`, in the project's slot, under an id naming the command's
    comment; False when that job exists already. The command job that calls this runs once per comment
    (it is never retried), and RQ takes no `unique=True` with a RateLimit, so looking first is enough."""
    options = OPTIONS[Jobs.ACCEPT_DRIFT].enqueue_args(
        tf_timeout=tf_timeout, rate_limit=project_rate_limit(target.repo_id, project)
    )
    run_id = job_id("accept-drift", request.repo_id, request.number, request.comment_id)
    if Job.exists(run_id, connection=conn):
        return False
    kwargs = {"request": request, "target": target, "project": project}
    _plans(conn).enqueue(Jobs.ACCEPT_DRIFT, kwargs=kwargs, job_id=run_id, **options)
    return True


@dataclass(frozen=True)
class ApplyRun:
    """What RQ knows of one project's apply job once every apply of the push has ended."""

    id: str
    project: Project
    finished: bool  # ended by returning: it reported its outcome itself
    gave_up: str | None  # why it stopped coming back, when it did (workers.rescheduling)


def apply_runs(conn: redis.Redis, job_ids: Sequence[str]) -> list[ApplyRun]:
    runs = []
    for run_id, job in zip(job_ids, Job.fetch_many(list(job_ids), connection=conn), strict=True):
        if job is None:  # kept a day after it ends, far longer than the finish waits for it
            raise LookupError(f"apply job {run_id} is gone from Redis")
        gave_up = job.meta.get(GAVE_UP)
        finished = job.get_status() == JobStatus.FINISHED
        runs.append(ApplyRun(job.id, job.kwargs["project"], finished, str(gave_up) if gave_up else None))
    return runs
