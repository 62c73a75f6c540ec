"""How one dispatch becomes many jobs: the projects in batches, each batch a job (a lone project a job
of its own under RQ's RateLimit, one at a time per project across all workers), then the job that
reports them all, which waits for every one of them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import redis
from rq import Queue, Worker
from rq.job import Dependency, Job, JobStatus
from rq.utils import as_text

from core.apply_order import waves
from core.contract import PLANS_QUEUE, ApplyConversation, Jobs, PlanRequest, PushRequest, job_id
from core.projects import Project
from core.trigger import Trigger, Why
from plumbing.enqueue import enqueue_once
from plumbing.job_options import OPTIONS, project_rate_limit

# The most jobs one job waits on directly. Each time a job ends, RQ reads the status of every job its
# dependent waits on, so a publish waiting on N plans costs O(N²) reads.
FAN_IN = 32
ENDED = frozenset({JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED, JobStatus.STOPPED})
# The most projects one job plans in turn: a retry after its worker died plans them all again.
MAX_BATCH = 16


class OpenPR(Protocol):
    """A PR whose plan a push to its base branch made stale (workers.flows.stale_plans)."""

    @property
    def number(self) -> int: ...
    @property
    def sha(self) -> str: ...
    @property
    def author(self) -> str: ...
    @property
    def fork(self) -> bool: ...


def batch_sizes(projects: int, workers: int) -> list[int]:
    """How many projects each job plans, in queue order: a job per project pays RQ's hop between jobs
    (saving a result, a fork, a new work horse) for each, so the projects go in batches, large first and
    shrinking (guided self-scheduling: each takes a 2×`workers`-th of what is left), so that the last jobs
    are small and the workers end together. `workers`: how many take from the queue (at least one is
    assumed)."""
    sizes = []
    left = projects
    while left > 0:
        size = min(MAX_BATCH, max(1, math.ceil(left / (2 * max(1, workers)))))
        sizes.append(size)
        left -= size
    return sizes


def enqueue_plans(
    conn: redis.Redis,
    request: PlanRequest,
    projects: Sequence[Project],
    *,
    tf_timeout: float,
    publish: str,
    publish_request: Any,
    carried: Sequence[object] = (),
    planning: dict[str, str] | None = None,
) -> list[str]:
    """The projects' plan jobs (batches; a lone project under its RateLimit), each re-run if its worker
    dies, then `publish` (with its own request and the plans `carried` forward, which no job makes again).
    `planning`, when given, is filled with identity → the id of the job that plans it."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    ids, batches = [], []
    start = 0
    for size in batch_sizes(len(projects), Worker.count(connection=conn, queue=queue)):
        batch = list(projects[start : start + size])
        start += size
        batches.append(batch)
        if size == 1:
            ids.append(enqueue_plan_job(conn, request, batch[0], tf_timeout=tf_timeout))
            continue
        ids.append(
            queue.enqueue(
                Jobs.PLAN_PROJECTS,
                kwargs={"request": request, "projects": batch},
                **OPTIONS[Jobs.PLAN_PROJECTS].enqueue_args(tf_timeout=tf_timeout, projects=size),
            ).id
        )
    if planning is not None:
        planning.update({p.identity: i for i, batch in zip(ids, batches, strict=True) for p in batch})
    extra = {"carried": list(carried)} if carried else {}
    _publish_after(queue, ids, publish, {"request": publish_request, "job_ids": ids, **extra})
    return ids


def enqueue_plan_job(conn: redis.Redis, request: PlanRequest, project: Project, *, tf_timeout: float) -> str:
    """One project's plan job, under its project's RateLimit (it waits its turn if the slot is busy)."""
    return (
        Queue(PLANS_QUEUE, connection=conn)
        .enqueue(
            Jobs.PLAN_PROJECT,
            kwargs={"request": request, "project": project},
            **OPTIONS[Jobs.PLAN_PROJECT].enqueue_args(
                tf_timeout=tf_timeout, rate_limit=project_rate_limit(request.repo_id, project)
            ),
        )
        .id
    )


def enqueue_publish_later(
    conn: redis.Redis, waiting: list[str], publish: str, kwargs: dict[str, Any], *, after: str
) -> None:
    """Publish job `after` found plans still to come (`waiting`, jobs its batches handed a busy project
    to): the same publish once they have ended, however often `after` runs."""
    _publish_after(Queue(PLANS_QUEUE, connection=conn), waiting, publish, kwargs, fixed_id=f"{after}-then")


def _publish_after(
    queue: Queue, ids: list[str], publish: str, kwargs: dict[str, Any], *, fixed_id: str | None = None
) -> None:
    """`publish` once every job of `ids` has ended, however it ended (re-run if its worker dies)."""
    if fixed_id is not None and not_ended(queue.connection, fixed_id):
        return  # enqueued by an earlier run of the same job, and waiting for this one
    queue.enqueue(
        publish,
        kwargs=kwargs,
        job_id=fixed_id,
        depends_on=all_ended(queue, ids),
        **OPTIONS[publish].enqueue_args(),
    )


def not_ended(conn: redis.Redis, job_id: str) -> bool:
    """Is job `job_id` there and not yet ended? (An ended one is enqueued again under its id.)"""
    status = conn.hget(Job.key_for(job_id), "status")
    return status is not None and JobStatus(as_text(status)) not in ENDED


def all_ended(queue: Queue, ids: list[str]) -> Dependency | None:
    """A dependency met once every job of `ids` has ended, however it ended. Over FAN_IN jobs, it waits
    on `joined` jobs, each waiting on FAN_IN of them (and so on up): a tree instead of one wide join.
    What waits goes to the queue's front when it is ready: its PR's plans are done, so it should not
    wait behind every plan queued since."""
    while len(ids) > FAN_IN:
        ids = [
            queue.enqueue(
                Jobs.JOINED,
                depends_on=Dependency(jobs=ids[start : start + FAN_IN], allow_failure=True, enqueue_at_front=True),
                **OPTIONS[Jobs.JOINED].enqueue_args(),
            ).id
            for start in range(0, len(ids), FAN_IN)
        ]
    return Dependency(jobs=ids, allow_failure=True, enqueue_at_front=True) if ids else None


def enqueue_plan_alone(conn: redis.Redis, request: PlanRequest, project: Project, *, tf_timeout: float) -> str:
    """The PR's only plan, under its project's RateLimit, in a job that also publishes it: the job hop
    to a publish job costs more than the publish. A publish job still follows, off the PR's path, and
    publishes only if that job failed for good (its worker killed on every try): the PR never stays
    pending."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    planned = queue.enqueue(
        Jobs.PLAN_AND_PUBLISH,
        kwargs={"request": request, "project": project},
        **OPTIONS[Jobs.PLAN_AND_PUBLISH].enqueue_args(
            tf_timeout=tf_timeout, rate_limit=project_rate_limit(request.repo_id, project)
        ),
    ).id
    enqueue_fallback_publish(conn, request, planned)
    return planned


def enqueue_fallback_publish(
    conn: redis.Redis,
    request: PlanRequest,
    planner: str,
    project: Project | None = None,
    carried: Sequence[object] = (),
) -> None:
    """A publish after job `planner` (the PR's only plan, which publishes itself), that publishes only
    if that job failed for good (its worker killed on every try): the PR never stays pending. One per
    planner, however often it runs. `project`: what it plans, when its own arguments do not say;
    `carried`: the plans it publishes with its own."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    kwargs: dict[str, Any] = {"request": request, "job_ids": [planner], "fallback": True}
    if project is not None:
        kwargs["project"] = project
    if carried:
        kwargs["carried"] = list(carried)
    _publish_after(queue, [planner], Jobs.PUBLISH_PLAN, kwargs, fixed_id=fallback_publish_id(planner))


def fallback_publish_id(planner: str) -> str:
    """The id of the publish that reports job `planner` if it fails for good."""
    return f"{planner}-fallback"


def enqueue_applies(
    conn: redis.Redis,
    push: PushRequest,
    projects: Sequence[Project],
    where: ApplyConversation,
    tf_timeout: float,
    waits: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """Per project, in push order and one at a time (the project's RateLimit), re-run after a death
    as its recorded phase allows (workers.flows.apply_project), each after the jobs of the projects it
    `waits` on (core.apply_order) have ended, however they ended (it reads how, and goes on or waits);
    then the job that sets the combined `plangate/apply`, whatever became of them."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    given = waits is not None  # None: each job reads the push's order as kept (a held apply run again)
    waits = waits or {}
    order = {name: tuple(deps) for name, deps in waits.items()}
    ids: dict[str, str] = {}
    job_ids = []
    for project in _dependencies_first(projects, waits):
        after = tuple(waits.get(project.name, ()))
        before = [ids[name] for name in after if name in ids]
        job = queue.enqueue(
            Jobs.APPLY_PROJECT,
            kwargs={"push": push, "project": project, "where": where, **({"waits": order} if given else {})},
            depends_on=Dependency(jobs=before, allow_failure=True) if before else None,
            **OPTIONS[Jobs.APPLY_PROJECT].enqueue_args(
                tf_timeout=tf_timeout, rate_limit=project_rate_limit(push.repo_id, project)
            ),
        )
        ids[project.name] = job.id
        job_ids.append(job.id)
    queue.enqueue(
        Jobs.FINISH_APPLY,
        kwargs={"push": push, "job_ids": job_ids, "where": where},
        depends_on=all_ended(queue, job_ids),
        **OPTIONS[Jobs.FINISH_APPLY].enqueue_args(),
    )
    return job_ids


def _dependencies_first(projects: Sequence[Project], waits: Mapping[str, Sequence[str]]) -> list[Project]:
    """`projects` wave by wave (core.apply_order.waves), so each comes after those it waits on."""
    level = {name: i for i, wave in enumerate(waves(dict(waits))) for name in wave} if waits else {}
    return sorted(projects, key=lambda p: level.get(p.name, 0))


def enqueue_replans(conn: redis.Redis, push: PushRequest, prs: Sequence[OpenPR]) -> None:
    """Plan each stale PR again, on GitHub's test merge with the code this push left on the branch."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    for planned in prs:
        replan = PlanRequest(
            **push.target(),
            pr=planned.number,
            sha=planned.sha,
            author=planned.author,
            fork=planned.fork,
            trigger=Trigger(Why.BASE_MOVED, push.after),
        )
        enqueue_once(
            queue,
            Jobs.PLAN_PR,
            job_id("plan", push.repo_id, planned.number, planned.sha, "main", push.after),
            replan,
        )
