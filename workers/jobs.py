"""The RQ entry points. Arguments are plain values; each job builds what it needs from them."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from typing import Any

from rq import Queue, RateLimit
from rq.job import Dependency, Job, JobStatus

from bot.enqueue import PLANS_QUEUE, enqueue_once
from workers import pr_command, pr_plan
from workers.context import context
from workers.pr_command import CommandRequest
from workers.pr_plan import PlanRequest
from workers.projects import Project
from workers.render import ProjectResult

STEP_MARGIN = 120  # RQ's own timeout must only fire after the runner's SIGINT → SIGTERM → SIGKILL


def project_rate_limit(repo_id: int, project: str) -> RateLimit:
    """One job at a time per (repo, project) across all workers: two never share a state lock."""
    return RateLimit(key=f"project-{repo_id}-{project}", concurrency=1)


def plan_pr(**kwargs: Any) -> list[str]:
    """Dispatch: find the PR's projects, enqueue one plan per project and the publish job after them."""
    ctx = context()
    req = _request(kwargs)
    projects = asyncio.run(pr_plan.dispatch(ctx, req))
    if not projects:
        return []
    queue = Queue(PLANS_QUEUE, connection=ctx.redis)
    timeout = int(ctx.settings.tf_timeout * 4 + STEP_MARGIN)
    ids = []
    for project in projects:
        job = queue.enqueue(
            "workers.jobs.plan_project",
            kwargs={"request": asdict(req), "project": asdict(project)},
            rate_limit=project_rate_limit(req.repo_id, project.name),
            job_timeout=timeout,
            result_ttl=24 * 3600,
        )
        ids.append(job.id)
    queue.enqueue(
        "workers.jobs.publish_plan",
        kwargs={"request": asdict(req), "job_ids": ids},
        depends_on=Dependency(jobs=ids, allow_failure=True),
        job_timeout=600,
    )
    return ids


def _request(data: dict[str, Any]) -> PlanRequest:
    return PlanRequest(**{**data, "only": tuple(data.get("only", ()))})


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


def publish_plan(request: dict[str, Any], job_ids: list[str]) -> None:
    req = _request(request)
    results = [r for r in (_result_of(i, req) for i in job_ids) if r is not None]
    asyncio.run(pr_plan.publish(context(), req, results))


def handle_command(**kwargs: Any) -> str:
    """A slash command; `/plan` re-plans the head SHA under a job id of its own."""
    ctx = context()
    outcome = asyncio.run(pr_command.handle(ctx, CommandRequest(**kwargs)))
    if outcome.replan is not None:
        req = outcome.replan
        job_id = f"plan-{req['repo_id']}-{req['pr']}-{req['sha']}-{req['trigger']}"
        enqueue_once(Queue(PLANS_QUEUE, connection=ctx.redis), "workers.jobs.plan_pr", job_id, req)
    return outcome.reaction


def apply_push(**kwargs: Any) -> None:
    """Apply on merge arrives with issue 5; until then a push is logged and dropped."""
    print(json.dumps({"push": kwargs.get("after"), "repo": kwargs.get("repo"), "outcome": "not-implemented"}))
