"""A merge group's required checks, as RQ runs them: the affected projects (merge_queue.dispatch), their
plans in batches (pr_runner.plan_batch, the PR path's), then one publish (merge_queue.publish)."""

from __future__ import annotations

from core.contract import GroupRequest, Jobs
from workers.adapters.queue import fanout, plan_results
from workers.context import WorkerContext
from workers.flows import merge_queue, run_records
from workers.flows.pr_runner import published_later


async def plan_merge_group(ctx: WorkerContext, request: GroupRequest) -> list[str]:
    """The dispatch job: the plan jobs it enqueued (their ids)."""
    projects = await merge_queue.dispatch(ctx, request)
    if not projects:
        return []
    return fanout.enqueue_plans(
        ctx.redis,
        request.as_plan(),
        projects,
        tf_timeout=ctx.settings.tf_timeout,
        publish=Jobs.PUBLISH_MERGE_GROUP,
        publish_request=request,
    )


async def publish_merge_group(ctx: WorkerContext, request: GroupRequest, job_ids: list[str]) -> None:
    planners = plan_results.fetch_jobs(ctx.redis, job_ids)
    if published_later(ctx, planners, Jobs.PUBLISH_MERGE_GROUP, {"request": request, "job_ids": job_ids}):
        return
    planned = [made for job in planners for made in plan_results.results_of(job, request.as_plan())]
    run_records.plans_ended(ctx, planned)
    results = [r for _, r in planned]
    await merge_queue.publish(ctx, request, results)
