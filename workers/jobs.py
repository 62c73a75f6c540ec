"""The RQ entry points: the only place that runs an event loop. Each reads its typed payload
(core.contract) and runs one flow (workers.flows), which enqueues the jobs it leads to through
workers.adapters.queue."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rq import Queue, get_current_job
from rq.job import Job, JobStatus

from core.contract import (
    PLANS_QUEUE,
    CommandRequest,
    CommentChange,
    GroupRequest,
    Jobs,
    PlanRequest,
    PushRequest,
    ReviewDismissal,
    Where,
    job_id,
)
from core.drift_schedule import DriftTarget
from core.projects import Project
from core.render.lost import KILLED
from core.results import BatchResult, ProjectResult
from plumbing.enqueue import enqueue_once
from plumbing.job_options import OPTIONS, project_rate_limit
from workers import watchdog
from workers.adapters.queue import fanout
from workers.adapters.store import apply_phases
from workers.context import context
from workers.flows import apply_project as apply_flow
from workers.flows import (
    carry,
    commands,
    dismissals,
    drift,
    group_runner,
    pr_plan,
    pr_runner,
    push_apply,
    recover,
    restore,
)
from workers.flows import last_word as last_word_flow
from workers.rescheduling import reschedulable


@reschedulable
def plan_pr(request: PlanRequest) -> list[str] | ProjectResult:
    return asyncio.run(pr_runner.plan_pr(context(), request))


@reschedulable
def plan_project(request: PlanRequest, project: Project) -> ProjectResult:
    return asyncio.run(pr_plan.plan_project(context(), request, project))


@reschedulable
def plan_projects(request: PlanRequest, projects: list[Project]) -> BatchResult:
    return asyncio.run(pr_runner.plan_batch(context(), request, projects))


@reschedulable
def plan_and_publish(request: PlanRequest, project: Project) -> ProjectResult:
    return asyncio.run(pr_runner.plan_alone(context(), request, project))


def joined() -> None:
    """Nothing: it ends once the jobs it waits on have ended, so that a publish waits on a few of these
    instead of hundreds of plans (workers.adapters.queue.fanout.FAN_IN)."""


@reschedulable
def publish_plan(
    request: PlanRequest,
    job_ids: list[str],
    carried: Sequence[carry.Carried] = (),
    backstop: bool = False,
    project: Project | None = None,
) -> None:
    asyncio.run(pr_runner.publish(context(), request, job_ids, carried, backstop, project))


@reschedulable
def plan_merge_group(request: GroupRequest) -> list[str]:
    return asyncio.run(group_runner.plan_merge_group(context(), request))


@reschedulable
def publish_merge_group(request: GroupRequest, job_ids: list[str]) -> None:
    asyncio.run(group_runner.publish_merge_group(context(), request, job_ids))


@reschedulable
def handle_command(request: CommandRequest) -> str:
    """A slash command (or a check run button); what it leads to is enqueued under ids of its own."""
    ctx = context()
    outcome = asyncio.run(commands.handle(ctx, request))
    if outcome is None:
        return "ignored"
    for held in outcome.reapply:
        fanout.applies(ctx.redis, held.push, [held.project], held.where(), ctx.settings.tf_timeout)
    if outcome.repush is not None:
        push = outcome.repush
        rerun = job_id("push", push.repo_id, push.after, "rerun", request.comment_id or request.event_id)
        enqueue_once(Queue(PLANS_QUEUE, connection=ctx.redis), Jobs.APPLY_PUSH, rerun, push)
    if outcome.redrift is not None:
        Queue(PLANS_QUEUE, connection=ctx.redis).enqueue(Jobs.DRIFT_CHECK, kwargs={"target": outcome.redrift})
    if outcome.replan is not None:
        replan = outcome.replan
        queue = Queue(PLANS_QUEUE, connection=ctx.redis)
        enqueue_once(queue, Jobs.PLAN_PR, job_id("plan", replan.repo_id, replan.pr, replan.sha, replan.trigger), replan)
    return outcome.reaction


def restore_comment(request: CommentChange) -> str:
    """One of plangate's comments changed or deleted by someone else: its text put back."""
    return asyncio.run(restore.on_change(context(), request))


@reschedulable
def apply_push(request: PushRequest) -> list[str]:
    """A push to the apply branch: one apply job per affected project, then the finish job. GitHub is
    only asked before anything is enqueued, so an outage brings the whole dispatch back."""
    ctx = context()
    found = asyncio.run(push_apply.dispatch(ctx, request))
    if found is None:
        return []
    fanout.replans_on_merge(ctx.redis, request, found.replans)
    return fanout.applies(ctx.redis, request, found.projects, found.where(request), ctx.settings.tf_timeout)


@reschedulable
def apply_project(push: PushRequest, project: Project, where: Where) -> str:
    this = get_current_job()
    assert this is not None, "runs as an RQ job"
    return asyncio.run(apply_flow.run(context(), push, project, where, this.id))


@reschedulable
def finish_apply(push: PushRequest, job_ids: list[str], where: Where) -> None:
    """Runs that ended without reporting (killed on every try, or stopped by an outage) are settled from
    their recorded phase; then `plangate/apply` from every project's outcome at the SHA."""
    ctx = context()
    jobs = [Job.fetch(one, connection=ctx.redis) for one in job_ids]
    phases = apply_phases.read_many(ctx.records, job_ids)
    unsettled = [
        (job.kwargs["project"], phase, str(job.meta.get(watchdog.GAVE_UP) or KILLED))
        for job, phase in zip(jobs, phases, strict=True)
        if job.get_status() != JobStatus.FINISHED and (phase is None or phase.name != "reported")
    ]
    names = [job.kwargs["project"].name for job in jobs]  # every project an apply job ran for
    asyncio.run(push_apply.finish(ctx, push, where, unsettled, names))


@reschedulable
def refresh_drift_targets() -> int:
    """Which repositories and projects have drift checks, from the App's installations."""
    return len(asyncio.run(drift.refresh(context())))


def drift_tick() -> list[str]:
    """Every minute (RQ cron): enqueue the drift checks due now, spread out per installation."""
    return drift.tick(context(), datetime.now(UTC))


@reschedulable
def drift_check(target: DriftTarget) -> list[str]:
    """One repository's check: resolve the default branch head, then one job per project."""
    ctx = context()
    sha, projects = asyncio.run(drift.projects_due(ctx, target))
    queue = Queue(PLANS_QUEUE, connection=ctx.redis)
    return [
        queue.enqueue(
            Jobs.DRIFT_PROJECT,
            kwargs={"target": target, "project": project, "sha": sha},
            **OPTIONS[Jobs.DRIFT_PROJECT].enqueue_args(
                tf_timeout=ctx.settings.tf_timeout, rate_limit=project_rate_limit(target.repo_id, project)
            ),
        ).id
        for project in projects
    ]


@reschedulable
def drift_project(target: DriftTarget, project: Project, sha: str) -> str:
    return asyncio.run(drift.check_project(context(), target, project, sha))


@reschedulable
def last_word(job: str, kwargs: dict[str, Any], why: str) -> str:
    """What a job that failed for good owed (workers.watchdog), said."""
    return asyncio.run(last_word_flow.say(context(), job, kwargs, why))


@reschedulable
def recover_lost_work() -> int:
    """Redis came back without plangate's records (workers.rq_worker): the PRs whose plan was pending
    are planned again; how many."""
    ctx = context()
    trigger = f"recovered-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    replans = asyncio.run(recover.lost_work(ctx, trigger))
    queue = Queue(PLANS_QUEUE, connection=ctx.redis)
    for replan in replans:
        enqueue_once(queue, Jobs.PLAN_PR, job_id("plan", replan.repo_id, replan.pr, replan.sha, trigger), replan)
    return len(replans)


@reschedulable
def review_dismissed(request: ReviewDismissal) -> str:
    """A dismissed review's approval stops counting (workers.flows.dismissals)."""
    return asyncio.run(dismissals.on_dismissal(context(), request))
