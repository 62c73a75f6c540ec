"""push to the default branch: fresh plan at `after`, gate, apply (workers.jobs.apply_push)."""

from __future__ import annotations

from gidgethub.routing import Router
from gidgethub.sansio import Event

from .context import Delivery, repo_args

router = Router()

ZERO_SHA = "0" * 40


@router.register("push")
async def apply_push(event: Event, delivery: Delivery) -> None:
    data = event.data
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return
    default_branch = data["repository"].get("default_branch")
    if data.get("ref") != f"refs/heads/{default_branch}":
        delivery.ignore("not the apply branch")
        return
    if data.get("deleted") or data.get("after") == ZERO_SHA:
        delivery.ignore("branch deleted")
        return
    kwargs = {
        **repo_args(data),
        "before": str(data.get("before") or ZERO_SHA),
        "after": str(data["after"]),
        "forced": bool(data.get("forced")),
    }
    job_id = f"push-{kwargs['repo_id']}-{kwargs['after']}"
    delivery.enqueue(delivery.plans, "workers.jobs.apply_push", job_id, kwargs)
