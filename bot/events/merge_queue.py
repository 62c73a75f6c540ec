"""merge_group: GitHub's merge queue asks for the required checks on the group's temporary commit.

`checks_requested` plans every affected project at `merge_group.head_sha` and reports
plangate/plan and plangate/destroy there (destroys pass only when approvals given on the group's
pull requests cover them). `destroyed` (merged, invalidated, dequeued) cancels what is still queued:
the apply happens on the push to the apply branch, as for any merge.
"""

from __future__ import annotations

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core import redis_keys
from core.contract import GroupRequest, Jobs, job_id

from .context import Delivery, repo_args

router = Router()


def _job_id(repo_id: int, head_sha: str) -> str:
    return job_id("mq", repo_id, head_sha)


@router.register("merge_group", action="checks_requested")
async def plan_group(event: Event, delivery: Delivery) -> None:
    data = event.data
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return
    group = data["merge_group"]
    request = GroupRequest(
        **repo_args(data),
        head_sha=str(group["head_sha"]),
        head_ref=str(group["head_ref"]),
        base_sha=str(group.get("base_sha") or ""),
    )
    job = _job_id(request.repo_id, request.head_sha)
    await delivery.enqueue(delivery.plans, Jobs.PLAN_MERGE_GROUP, job, request)


@router.register("merge_group", action="destroyed")
async def drop_group(event: Event, delivery: Delivery) -> None:
    data = event.data
    sha = str(data["merge_group"]["head_sha"])
    repo_id = int(data["repository"]["id"])
    delivery.plans.connection.set(redis_keys.mq_gone(repo_id, sha), "1", ex=redis_keys.MQ_GONE_TTL)
    delivery.cancel_queued(_job_id(repo_id, sha), started="group plan already running or done: its results are dropped")
