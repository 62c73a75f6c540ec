"""The RQ entry points. Arguments are plain values; each job builds what it needs from them."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import redis
from rq import Callback, Queue, RateLimit, Retry, get_current_job
from rq.job import Dependency, Job, JobStatus

from bot.enqueue import COUNT_ABANDONED, PLAN_RETRIES, PLANS_QUEUE, enqueue_once
from core.drift_schedule import DriftTarget
from core.projects import Project
from core.render.plan import ProjectResult
from workers.adapters.github.client import RateLimited, deferrable
from workers.adapters.github.metrics import Recorder
from workers.adapters.store import applies as apply_store
from workers.context import context
from workers.flows import apply_project as apply_project_module
from workers.flows import commands as pr_command
from workers.flows import drift, merge_queue, pr_plan, push_apply
from workers.flows.apply_project import Where
from workers.flows.merge_queue import GroupRequest
from workers.flows.outcome import CommandRequest
from workers.flows.pr_plan import PlanRequest
from workers.flows.push_apply import PushRequest
from workers.flows.stale_plans import PlannedPR

STEP_MARGIN = 120  # RQ's own timeout must only fire after the runner's SIGINT → SIGTERM → SIGKILL
RERUN = Retry(max=PLAN_RETRIES)  # plan and drift jobs: no side effect, so a dead worker's job runs again
ABANDONED = Callback(COUNT_ABANDONED)

P = ParamSpec("P")
R = TypeVar("R")


def reschedulable(func: Callable[P, R]) -> Callable[P, R]:
    """A job that may be run again from its start: a long GitHub rate-limit wait is handed to RQ's
    scheduler (the same job, dependents still waiting) instead of holding this worker; and a run that
    follows a dead worker's is counted as recovered."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        job = get_current_job()
        token = deferrable.set(True)
        try:
            result = func(*args, **kwargs)
        except RateLimited as exc:
            if job is not None:
                job.retries_left = (job.retries_left or 0) + 1
                job.retry_intervals = [math.ceil(exc.wait)]
                Recorder(job.connection).job("deferred")
            raise
        finally:
            deferrable.reset(token)
        if job is not None and job.retries_left is not None and job.retries_left < PLAN_RETRIES:
            Recorder(job.connection).job("recovered")
        return result

    return run


def project_rate_limit(repo_id: int, project: Project) -> RateLimit:
    """One job at a time per (repo, dir, workspace) across all workers: two never share a state lock."""
    slug = hashlib.sha256(f"{project.dir}\0{project.workspace}".encode()).hexdigest()[:16]
    return RateLimit(key=f"project-{repo_id}-{slug}", concurrency=1)


@reschedulable
def plan_pr(**kwargs: Any) -> list[str]:
    """Dispatch: find the PR's projects, enqueue one plan per project and the publish job after them."""
    ctx = context()
    dispatched = asyncio.run(pr_plan.dispatch(ctx, _request(kwargs)))
    if dispatched is None:
        return []
    req, projects = dispatched
    queue = Queue(PLANS_QUEUE, connection=ctx.redis)
    timeout = int(ctx.settings.tf_timeout * 4 + STEP_MARGIN)
    ids = []
    for project in projects:
        job = queue.enqueue(
            "workers.jobs.plan_project",
            kwargs={"request": asdict(req), "project": asdict(project)},
            rate_limit=project_rate_limit(req.repo_id, project),
            job_timeout=timeout,
            result_ttl=24 * 3600,
            retry=RERUN,
            on_failure=ABANDONED,
        )
        ids.append(job.id)
    queue.enqueue(
        "workers.jobs.publish_plan",
        kwargs={"request": asdict(req), "job_ids": ids},
        depends_on=Dependency(jobs=ids, allow_failure=True),
        job_timeout=600,
        retry=RERUN,
        on_failure=ABANDONED,
    )
    return ids


def _request(data: dict[str, Any]) -> PlanRequest:
    return PlanRequest(**{**data, "only": tuple(data.get("only", ()))})


@reschedulable
def plan_project(request: dict[str, Any], project: dict[str, Any]) -> ProjectResult:
    return pr_plan.plan_project(context(), _request(request), Project(**project))


def _result_of(job_id: str, request: PlanRequest) -> ProjectResult | None:
    ctx = context()
    job = Job.fetch(job_id, connection=ctx.redis)
    if job.get_status() == JobStatus.FINISHED:
        value = job.return_value()
        return value if isinstance(value, ProjectResult) else None
    project = job.kwargs.get("project", {})
    failure = job.latest_result()
    detail = (failure.exc_string or "").strip().splitlines()[-1:] if failure else []
    return ProjectResult(
        name=project.get("name", "?"),
        dir=project.get("dir", "?"),
        workspace=project.get("workspace", "default"),
        tool=project.get("tool") or "terraform",
        sha=request.sha,
        plan=None,
        error="the plan job died: " + (detail[0] if detail else str(job.get_status())),
    )


@reschedulable
def publish_plan(request: dict[str, Any], job_ids: list[str]) -> None:
    req = _request(request)
    results = [r for r in (_result_of(i, req) for i in job_ids) if r is not None]
    asyncio.run(pr_plan.publish(context(), req, results))


@reschedulable
def plan_merge_group(**kwargs: Any) -> list[str]:
    """A merge group's required checks: one plan per affected project, then the group's publish job."""
    ctx = context()
    group = GroupRequest(**kwargs)
    projects = asyncio.run(merge_queue.dispatch(ctx, group))
    if not projects:
        return []
    queue = Queue(PLANS_QUEUE, connection=ctx.redis)
    request = asdict(group.as_plan())
    ids = [
        queue.enqueue(
            "workers.jobs.plan_project",
            kwargs={"request": request, "project": asdict(project)},
            rate_limit=project_rate_limit(group.repo_id, project),
            job_timeout=int(ctx.settings.tf_timeout * 4 + STEP_MARGIN),
            result_ttl=24 * 3600,
            retry=RERUN,
            on_failure=ABANDONED,
        ).id
        for project in projects
    ]
    queue.enqueue(
        "workers.jobs.publish_merge_group",
        kwargs={"group": kwargs, "job_ids": ids},
        depends_on=Dependency(jobs=ids, allow_failure=True),
        job_timeout=600,
        retry=RERUN,
        on_failure=ABANDONED,
    )
    return ids


@reschedulable
def publish_merge_group(group: dict[str, Any], job_ids: list[str]) -> None:
    req = GroupRequest(**group)
    results = [r for r in (_result_of(i, req.as_plan()) for i in job_ids) if r is not None]
    asyncio.run(merge_queue.publish(context(), req, results))


@reschedulable
def handle_command(**kwargs: Any) -> str:
    """A slash command; `/plan` re-plans the head SHA under a job id of its own."""
    ctx = context()
    outcome = asyncio.run(pr_command.handle(ctx, CommandRequest(**kwargs)))
    if outcome is None:
        return "ignored"
    for held in outcome.reapply:
        where = Where(number=held.number, is_pr=held.is_pr, authors=tuple(held.authors), approved_on=held.approved_on)
        enqueue_applies(ctx.redis, _push(held.push), [Project(**held.project)], where)
    if outcome.redrift is not None:
        queue = Queue(PLANS_QUEUE, connection=ctx.redis)
        queue.enqueue("workers.jobs.drift_check", kwargs={"target": outcome.redrift})
    if outcome.replan is not None:
        req = outcome.replan
        job_id = f"plan-{req['repo_id']}-{req['pr']}-{req['sha']}-{req['trigger']}"
        enqueue_once(Queue(PLANS_QUEUE, connection=ctx.redis), "workers.jobs.plan_pr", job_id, req)
    return outcome.reaction


def apply_push(**kwargs: Any) -> list[str]:
    """Dispatch a push to the default branch: one apply job per affected project, then the finish job."""
    ctx = context()
    req = _push(kwargs)
    found = asyncio.run(push_apply.dispatch(ctx, req))
    if found is None:
        return []
    _replan_on_merge(ctx.redis, req, found.replans)
    pr = found.pr
    where = Where(
        number=pr.number if pr else None,
        is_pr=pr is not None,
        authors=(pr.author,) if pr else req.authors,
        approved_on=pr.head_sha if pr else None,
    )
    return enqueue_applies(ctx.redis, req, found.projects, where)


def _replan_on_merge(conn: redis.Redis, req: PushRequest, prs: list[PlannedPR]) -> None:
    """Plan each stale PR again, on GitHub's test merge with the code this push left on the branch."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    for planned in prs:
        replan = PlanRequest(
            installation_id=req.installation_id,
            repo_id=req.repo_id,
            repo=req.repo,
            clone_url=req.clone_url,
            default_branch=req.default_branch,
            pr=planned.number,
            sha=planned.sha,
            author=planned.author,
            fork=planned.fork,
            trigger=f"main-{req.after}",
            on_merge=True,
        )
        job_id = f"plan-{req.repo_id}-{planned.number}-{planned.sha}-main-{req.after}"
        enqueue_once(queue, "workers.jobs.plan_pr", job_id, asdict(replan))


def _push(data: dict[str, Any]) -> PushRequest:
    return PushRequest(**{**data, "authors": tuple(data.get("authors", ()))})


def _where(data: dict[str, Any]) -> Where:
    return Where(**{**data, "authors": tuple(data.get("authors", ()))})


def enqueue_applies(conn: redis.Redis, req: PushRequest, projects: list[Project], where: Where) -> list[str]:
    """Per project, in push order and one at a time (the project's RateLimit); then the combined status."""
    queue = Queue(PLANS_QUEUE, connection=conn)
    ids = []
    for project in projects:
        job = queue.enqueue(
            "workers.jobs.apply_project",
            kwargs={"push": asdict(req), "project": asdict(project), "where": asdict(where)},
            rate_limit=project_rate_limit(req.repo_id, project),
            job_timeout=int(context().settings.tf_timeout * 5 + STEP_MARGIN),
            result_ttl=24 * 3600,
            failure_ttl=7 * 24 * 3600,
        )
        ids.append(job.id)
    queue.enqueue(
        "workers.jobs.finish_apply",
        kwargs={"push": asdict(req), "job_ids": ids, "where": asdict(where)},
        depends_on=Dependency(jobs=ids, allow_failure=True),
        job_timeout=600,
    )
    return ids


def apply_project(push: dict[str, Any], project: dict[str, Any], where: dict[str, Any]) -> str:
    return apply_project_module.run(context(), _push(push), Project(**project), _where(where))


def finish_apply(push: dict[str, Any], job_ids: list[str], where: dict[str, Any]) -> None:
    """Jobs that died mid-apply are reported; then `plangate/apply` from every project's outcome at the SHA."""
    ctx = context()
    req, at = _push(push), _where(where)
    died: list[Project] = []
    for job_id in job_ids:
        job = Job.fetch(job_id, connection=ctx.redis)
        if job.get_status() != JobStatus.FINISHED:
            project = Project(**job.kwargs["project"])
            in_apply = ctx.redis.delete(apply_store.applying_key(req.repo_id, req.after, project.identity))
            push_apply.record_outcome(ctx, req, project.name, "error" if in_apply else "failed")
            if in_apply:
                died.append(project)
    asyncio.run(push_apply.finish(ctx, req, at, died))


@reschedulable
def refresh_drift_targets() -> int:
    """Which repositories and projects have drift checks, from the App's installations."""
    return len(asyncio.run(drift.refresh(context())))


def drift_tick() -> list[str]:
    """Every minute (RQ cron): enqueue the drift checks due now, spread out per installation."""
    return drift.tick(context(), datetime.now(UTC))


@reschedulable
def drift_check(target: dict[str, Any]) -> list[str]:
    """One repository's check: resolve the default branch head, then one job per project."""
    ctx = context()
    goal = DriftTarget.from_plain(target)
    sha, projects = asyncio.run(drift.projects_due(ctx, goal))
    queue = Queue(PLANS_QUEUE, connection=ctx.redis)
    ids = []
    for project in projects:
        job = queue.enqueue(
            "workers.jobs.drift_project",
            kwargs={"target": target, "project": asdict(project), "sha": sha},
            rate_limit=project_rate_limit(goal.repo_id, project),
            job_timeout=int(ctx.settings.tf_timeout * 4 + STEP_MARGIN),
            retry=RERUN,
            on_failure=ABANDONED,
        )
        ids.append(job.id)
    return ids


@reschedulable
def drift_project(target: dict[str, Any], project: dict[str, Any], sha: str) -> str:
    return drift.check_project(context(), DriftTarget.from_plain(target), Project(**project), sha)
