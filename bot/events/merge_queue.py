"""merge_group: GitHub's merge queue asks for the required checks on the group's temporary commit.

`checks_requested` plans every affected project at `merge_group.head_sha` and reports
plangate/plan and plangate/destroy there (destroys pass only when approvals given on the group's
pull requests cover them). `destroyed` (merged, invalidated, dequeued) has a job cancel what is still queued:
the apply happens on the push to the apply branch, as for any merge.
"""

from __future__ import annotations

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.contract import GroupRequest, Jobs, job_id
from core.contract_cleanup import GroupGone

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
    """A job (workers.flows.cleanup) marks the group gone and cancels its plan if it has not started."""
    data = event.data
    repo_id, sha = int(data["repository"]["id"]), str(data["merge_group"]["head_sha"])
    gone = GroupGone(repo_id, sha, _job_id(repo_id, sha))
    await delivery.enqueue(delivery.commands, Jobs.MERGE_GROUP_GONE, gone.job_id(), gone)
