"""push to a branch: fresh plan at `after`, gate, apply (workers.jobs.apply_push).

Which branch applies is `apply_branch` in the default branch's `.plangate.yml` (default: the
default branch). Only the job can read that, so every branch push is enqueued and the job drops
pushes to other branches after one API call; tags and deletions never are.
"""

from __future__ import annotations

from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.contract import Jobs, PushRequest, job_id

from .context import Delivery, repo_args

router = Router()

ZERO_SHA = "0" * 40


def push_authors(data: dict[str, Any]) -> list[str]:
    """Who made a pushed change: the pusher, and every commit author and committer GitHub maps to a user.
    For a direct push none of them may approve its destroys (unless self-approval is allowed)."""
    logins = [str((data.get("sender") or {}).get("login") or "")]
    for commit in [*(data.get("commits") or []), data.get("head_commit") or {}]:
        for role in ("author", "committer"):
            logins.append(str((commit.get(role) or {}).get("username") or ""))
    return [login for login in dict.fromkeys(logins) if login]


def push_request(data: dict[str, Any]) -> PushRequest:
    """A branch push's payload → the apply job's request."""
    return PushRequest(
        **repo_args(data),
        before=str(data.get("before") or ZERO_SHA),
        after=str(data["after"]),
        forced=bool(data.get("forced")),
        branch=str(data["ref"]).removeprefix("refs/heads/"),
        authors=tuple(push_authors(data)),
    )


@router.register("push")
async def apply_push(event: Event, delivery: Delivery) -> None:
    data = event.data
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return
    ref = str(data.get("ref") or "")
    if not ref.startswith("refs/heads/"):
        delivery.ignore("not a branch")
        return
    if data.get("deleted") or data.get("after") == ZERO_SHA:
        delivery.ignore("branch deleted")
        return
    request = push_request(data)
    await delivery.enqueue(delivery.plans, Jobs.APPLY_PUSH, job_id("push", request.repo_id, request.after), request)
