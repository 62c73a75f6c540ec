"""One pull request's plan, end to end, as RQ runs it (Atlantis's command runner): decide the projects
(pr_plan.dispatch), plan them in the shape that fits, publish once (pr_publish.publish). Each public
function is the body of one job (workers.jobs); the jobs reach each other through RQ
(workers.adapters.queue).

The shapes, chosen in one place (`plan_pr`), cheapest first:
- one project, its slot free → plan here: the dispatch job plans and publishes it, two job hops fewer;
- one project, nothing carried → its own job (`plan_alone`), which publishes too, one job hop fewer;
- many (or one beside carried plans, its slot busy) → batches (`plan_batch`), then one `publish` job
  that waits for them all.
A job that publishes its own plan leaves a fallback publish behind it, which publishes only if that
job fails for good: the PR never stays pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core import redis_keys
from core.contract import Jobs, PlanRequest
from core.projects import Project
from core.results import BatchResult, ProjectResult
from plumbing.job_options import OPTIONS, project_rate_limit
from workers.adapters.queue import fanout, plan_results, slots
from workers.adapters.queue.plan_results import PlanJob
from workers.adapters.queue.running import this_job
from workers.adapters.terraform import pipeline
from workers.context import WorkerContext
from workers.flows import plan_progress, pr_plan, pr_publish, run_records
from workers.flows.carry import Carried, shown_at


async def plan_pr(ctx: WorkerContext, request: PlanRequest) -> list[str] | ProjectResult:
    """The dispatch job: the plan jobs it enqueued (their ids), or the plan it made and published."""
    decided = await decide(ctx, request)
    if decided is None:
        return []
    req, projects, kept = decided.request, decided.projects, decided.carried
    tf_timeout = ctx.settings.tf_timeout
    if len(projects) == 1:
        here = await _plan_here(ctx, req, projects[0], kept)  # one project, its slot free → plan here
        if here is not None:
            return here
        if not kept:  # one project → its own job
            return [fanout.enqueue_plan_alone(ctx.redis, req, projects[0], tf_timeout=tf_timeout)]
    # many → batches, then one publish
    planning: dict[str, str] = {}
    ids = fanout.enqueue_plans(
        ctx.redis,
        req,
        projects,
        tf_timeout=tf_timeout,
        publish=Jobs.PUBLISH_PLAN,
        publish_request=req,
        carried=kept,
        planning=planning,
    )
    await plan_progress.start(ctx, req, projects, planning)  # two or more: the comment shows progress
    return ids


async def decide(ctx: WorkerContext, request: PlanRequest) -> pr_plan.PlansToMake | None:
    """The projects to plan and the plans carried forward from earlier SHAs (pr_plan.dispatch); a
    carried plan whose job RQ no longer holds (older than a result's TTL) is made again. None: nothing
    to plan."""
    dispatched = await pr_plan.dispatch(ctx, request)
    if dispatched is None:
        return None
    held = plan_results.still_held(ctx.redis, [kept.last.job_id for kept in dispatched.carried])
    kept = [c for c, h in zip(dispatched.carried, held, strict=True) if h]
    again = [c.project for c, h in zip(dispatched.carried, held, strict=True) if not h]
    return replace(dispatched, projects=dispatched.projects + again, carried=kept)


async def _plan_here(
    ctx: WorkerContext, req: PlanRequest, project: Project, kept: list[Carried]
) -> ProjectResult | None:
    """The PR's only plan to make, made and published (with the plans `kept`) by the dispatch job, when
    the project's slot is free now and the job's timeout leaves a plan job's; else None."""
    this = this_job()
    left = this.seconds_left()
    if left is not None and left < OPTIONS[Jobs.PLAN_AND_PUBLISH].seconds_needed(ctx.settings.tf_timeout):
        return None
    with slots.held(ctx.redis, project_rate_limit(req.repo_id, project), this.id) as mine:
        if not mine:
            return None
        this.keep_result(redis_keys.PLAN_RESULT_TTL)  # kept as a plan job's, so the next push may carry it
        fanout.enqueue_fallback_publish(ctx.redis, req, this.id, project, kept)
        carried, made = carried_plans(ctx, req, kept)
        return await pr_plan.plan_and_publish(ctx, req, project, this.id, carried, made)


async def plan_alone(ctx: WorkerContext, req: PlanRequest, project: Project) -> ProjectResult:
    """A PR's only plan in a job of its own, published by it. RQ keeps the result under this job's id,
    as it keeps a plan job's, so the next push can carry it forward."""
    return await pr_plan.plan_and_publish(ctx, req, project, this_job().id)


async def plan_batch(ctx: WorkerContext, req: PlanRequest, projects: list[Project]) -> BatchResult:
    """Several projects (a PR's or a merge group's) planned in turn by one job (fanout.batch_sizes), each
    while the job holds its project's slot. A project whose slot stays busy (another plan, apply or drift
    of it runs or waits) gets a job of its own that waits its turn, which the publish awaits."""
    this, results = this_job(), {}

    async def planned_unless_busy(todo: list[Project]) -> list[Project]:
        busy = []
        for project in todo:
            with slots.held(ctx.redis, project_rate_limit(req.repo_id, project), this.id) as mine:
                if mine:
                    results[project.identity] = await pr_plan.plan_project(ctx, req, project)
                else:
                    busy.append(project)
            if mine:
                await plan_progress.done(ctx, req, project.identity, this.id)
        return busy

    busy = await planned_unless_busy(await planned_unless_busy(projects))  # the busy ones tried once more
    tf_timeout = ctx.settings.tf_timeout
    delegated = {p.identity: fanout.enqueue_plan_job(ctx.redis, req, p, tf_timeout=tf_timeout) for p in busy}
    plan_progress.handed_on(ctx, req, delegated)
    return BatchResult(results, delegated)


async def plan_one(ctx: WorkerContext, req: PlanRequest, project: Project) -> ProjectResult:
    """One project in a job of its own, among others (alone in its batch, or handed on by a batch)."""
    result = await pr_plan.plan_project(ctx, req, project)
    await plan_progress.done(ctx, req, project.identity, this_job().id)
    return result


async def publish(
    ctx: WorkerContext,
    req: PlanRequest,
    job_ids: list[str],
    carried: Sequence[Carried] = (),
    fallback: bool = False,
    project: Project | None = None,
) -> None:
    """The PR's comment and statuses from its plan jobs `job_ids` and the plans `carried`. As the
    `fallback` of a job that plans and publishes the PR's only `project`, only when that job did not
    finish (it published itself if it did)."""
    conn = ctx.redis
    if fallback and all(plan_results.finished(conn, i) for i in job_ids):
        return
    planners = plan_results.fetch_jobs(conn, job_ids)
    again = {"request": req, "job_ids": job_ids, "carried": list(carried)}
    if published_later(ctx, planners, Jobs.PUBLISH_PLAN, again):
        return
    planned = [made for job in planners for made in plan_results.results_of(job, req, project)]
    run_records.plans_ended(ctx, planned)
    results, made = gathered(ctx, req, planned, carried)
    await pr_publish.publish(ctx, req, results, made)


def published_later(ctx: WorkerContext, planners: list[PlanJob], publish: str, kwargs: dict[str, Any]) -> bool:
    """Are plans still to come (a batch handed them on)? Then `publish` runs again once they end."""
    waiting = plan_results.still_to_come(planners)
    if waiting:
        fanout.enqueue_publish_later(ctx.redis, waiting, publish, kwargs, after=this_job().id)
    return bool(waiting)


def gathered(
    ctx: WorkerContext, req: PlanRequest, planned: list[tuple[str, ProjectResult]], carried: Sequence[Carried]
) -> tuple[list[ProjectResult], dict[str, tuple[str, str]]]:
    """What a publish shows: the plans made (each with the job that made it) and those carried forward;
    and who made each plan, at which SHA, for the next push to carry them on."""
    shown, made = carried_plans(ctx, req, carried)
    return [r for _, r in planned] + shown, {r.identity: (i, req.sha) for i, r in planned} | made


def carried_plans(
    ctx: WorkerContext, req: PlanRequest, carried: Sequence[Carried]
) -> tuple[list[ProjectResult], dict[str, tuple[str, str]]]:
    """The plans carried forward from earlier SHAs of the PR, shown at this one (read from the jobs that
    made them), and who made each, at which SHA."""
    found = plan_results.held_results(ctx.redis, req, [(kept.last.job_id, kept.project) for kept in carried])
    shown = []
    for kept in carried:
        result = found.get((kept.last.job_id, kept.project.identity))
        if result is None:
            why = f"the plan carried from {kept.last.planned_at[:7]} has expired: comment `/plan` to plan again"
            shown.append(pipeline.failure(kept.project, req.sha, why))
        else:
            shown.append(shown_at(result, req, kept))
    return shown, {kept.project.identity: (kept.last.job_id, kept.last.planned_at) for kept in carried}
