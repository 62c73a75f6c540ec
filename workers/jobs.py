"""The RQ entry points: the only place that runs an event loop. Each reads its typed payload
(core.contract), runs one flow (workers.flows) and fans out the jobs it leads to (workers.fanout)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rq import Queue, get_current_job
from rq.job import Job, JobStatus

from core import redis_keys
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
from workers import fanout, plan_results, slots, watchdog
from workers.adapters.store import apply_phases
from workers.context import context
from workers.flows import apply_project as apply_flow
from workers.flows import (
    carry,
    commands,
    dismissals,
    drift,
    merge_queue,
    pr_plan,
    pr_publish,
    push_apply,
    recover,
    restore,
)
from workers.flows import last_word as last_word_flow
from workers.rescheduling import reschedulable


@reschedulable
def plan_pr(request: PlanRequest) -> list[str] | ProjectResult:
    """Dispatch: find the PR's projects, enqueue their plans (in batches) and the publish job after them
    (their ids); a PR's only project is planned and published here when it can be (its result)."""
    ctx = context()
    dispatched = asyncio.run(pr_plan.dispatch(ctx, request))
    if dispatched is None:
        return []
    kept = _still_held(dispatched.carried)
    projects = dispatched.projects + [c.project for c in dispatched.carried if c not in kept]
    if len(projects) == 1:
        in_place = _plan_in_place(dispatched.request, projects[0], kept)
        if in_place is not None:
            return in_place
        if not kept:
            return [fanout.plan_alone(ctx.redis, dispatched.request, projects[0], tf_timeout=ctx.settings.tf_timeout)]
    return fanout.plans(
        ctx.redis,
        dispatched.request,
        projects,
        tf_timeout=ctx.settings.tf_timeout,
        publish=Jobs.PUBLISH_PLAN,
        publish_request=dispatched.request,
        carried=kept,
    )


def _plan_in_place(request: PlanRequest, project: Project, kept: list[carry.Carried]) -> ProjectResult | None:
    """The PR's only plan to make, made and published (with the plans `kept` from earlier SHAs) by this
    dispatch job, two job hops fewer, when the project's RateLimit slot is free now and this job's
    timeout leaves a plan job's; else None."""
    ctx, this = context(), get_current_job()
    assert this is not None and this.started_at is not None, "runs as an RQ job"
    needs = ctx.settings.tf_timeout * 4 + fanout.STEP_MARGIN + fanout.PUBLISH_TIMEOUT
    if this.timeout is not None and (datetime.now(UTC) - this.started_at).total_seconds() + needs > this.timeout:
        return None
    with slots.held(ctx.redis, fanout.project_rate_limit(request.repo_id, project), this.id) as mine:
        if not mine:
            return None
        this.result_ttl = redis_keys.PLAN_RESULT_TTL  # kept as a plan job's, so the next push may carry it
        fanout.backstop(ctx.redis, request, this.id, project, kept)
        carried = plan_results.carried_results(ctx.redis, kept, request)
        made = plan_results.made_at(kept)
        return asyncio.run(pr_plan.plan_and_publish(ctx, request, project, this.id, carried, made))


def _still_held(carried: list[carry.Carried]) -> list[carry.Carried]:
    """The carried plans whose job RQ still holds; the others (older than a result's TTL) are made again."""
    pipe = context().redis.pipeline(transaction=False)
    for kept in carried:
        pipe.exists(Job.key_for(kept.last.job_id))
    return [kept for kept, held in zip(carried, pipe.execute(), strict=True) if held]


@reschedulable
def plan_project(request: PlanRequest, project: Project) -> ProjectResult:
    return asyncio.run(pr_plan.plan_project(context(), request, project))


@reschedulable
def plan_projects(request: PlanRequest, projects: list[Project]) -> BatchResult:
    """Several of a PR's projects, planned in turn by one job (workers.fanout.batch_sizes), each while
    this job holds its project's RateLimit slot. A project whose slot stays busy (another plan, apply
    or drift of it runs or waits) gets a job of its own that waits its turn, which the publish awaits."""
    ctx, this = context(), get_current_job()
    assert this is not None, "runs as an RQ job"
    results: dict[str, ProjectResult] = {}

    def planned_unless_busy(todo: list[Project]) -> list[Project]:
        busy = []
        for project in todo:
            with slots.held(ctx.redis, fanout.project_rate_limit(request.repo_id, project), this.id) as mine:
                if mine:
                    results[project.identity] = asyncio.run(pr_plan.plan_project(ctx, request, project))
                else:
                    busy.append(project)
        return busy

    busy = planned_unless_busy(planned_unless_busy(projects))  # the busy ones tried once more at the end
    tf_timeout = ctx.settings.tf_timeout
    delegated = {p.identity: fanout.plan_job(ctx.redis, request, p, tf_timeout=tf_timeout) for p in busy}
    return BatchResult(results, delegated)


@reschedulable
def plan_and_publish(request: PlanRequest, project: Project) -> ProjectResult:
    """A PR's only plan, published by the job that made it (one job hop fewer). RQ keeps the result under
    this job's id, as it keeps a plan_project's, so the next push can carry it forward."""
    this = get_current_job()
    assert this is not None, "runs as an RQ job"
    return asyncio.run(pr_plan.plan_and_publish(context(), request, project, this.id))


def joined() -> None:
    """Nothing: it ends once the jobs it waits on have ended, so that a publish waits on a few of these
    instead of hundreds of plans (workers.fanout.FAN_IN)."""


def _published_later(planners: list[Job], publish: str, kwargs: dict[str, Any]) -> bool:
    """Are plans still to come (a batch handed them on)? Then `publish` runs again once they end."""
    waiting = plan_results.still_to_come(planners)
    if waiting:
        this = get_current_job()
        assert this is not None, "runs as an RQ job"
        fanout.publish_later(context().redis, waiting, publish, kwargs, after=this.id)
    return bool(waiting)


@reschedulable
def publish_plan(
    request: PlanRequest,
    job_ids: list[str],
    carried: Sequence[carry.Carried] = (),
    backstop: bool = False,
    project: Project | None = None,
) -> None:
    """The PR's comment and statuses from its plan jobs. As the `backstop` of a job that plans and
    publishes the PR's only `project`, only when that job did not finish (it published itself if it did)."""
    conn = context().redis
    if backstop and all(plan_results.finished(conn, i) for i in job_ids):
        return
    planners = plan_results.fetched(conn, job_ids)
    again = {"request": request, "job_ids": job_ids, "carried": list(carried)}
    if _published_later(planners, Jobs.PUBLISH_PLAN, again):
        return
    planned = [m for job in planners for m in plan_results.planned(job, request, project)]
    results = [r for _, r in planned] + plan_results.carried_results(conn, carried, request)
    made = {r.identity: (i, request.sha) for i, r in planned} | plan_results.made_at(carried)
    asyncio.run(pr_publish.publish(context(), request, results, made))


@reschedulable
def plan_merge_group(request: GroupRequest) -> list[str]:
    """A merge group's required checks: the affected projects' plans (in batches), then the group's publish."""
    ctx = context()
    projects = asyncio.run(merge_queue.dispatch(ctx, request))
    if not projects:
        return []
    return fanout.plans(
        ctx.redis,
        request.as_plan(),
        projects,
        tf_timeout=ctx.settings.tf_timeout,
        publish=Jobs.PUBLISH_MERGE_GROUP,
        publish_request=request,
    )


@reschedulable
def publish_merge_group(request: GroupRequest, job_ids: list[str]) -> None:
    planners = plan_results.fetched(context().redis, job_ids)
    if _published_later(planners, Jobs.PUBLISH_MERGE_GROUP, {"request": request, "job_ids": job_ids}):
        return
    results = [r for job in planners for _, r in plan_results.planned(job, request.as_plan())]
    asyncio.run(merge_queue.publish(context(), request, results))


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
            rate_limit=fanout.project_rate_limit(target.repo_id, project),
            job_timeout=int(ctx.settings.tf_timeout * 4 + fanout.STEP_MARGIN),
            retry=fanout.RERUN,
            on_failure=fanout.FAILED,
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
