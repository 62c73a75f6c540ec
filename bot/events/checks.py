"""check_run: GitHub's "Re-run" button (a re-plan) and the "Approve destroys" button on plangate/destroy.

GitHub sends these only to the App that owns the run. A press is a command as if its presser had
commented `/plan` or `/approve-destroy SHA` on the run's pull request, and is judged by the same
rules. The App's own `created` and `completed` events are ignored (they would loop).
"""

from __future__ import annotations

from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.contract import CONTEXTS, CommandRequest, GroupRequest, Jobs, job_id

from .context import Delivery, repo_args

router = Router()
OUR_RUNS = CONTEXTS
APPROVE = "approve-"  # + the first hex digits of the plan's digest the button's page showed


def _command(data: dict[str, Any], command: str, event_id: str, plan_digest: str = "") -> CommandRequest | None:
    run, sender = data["check_run"], data["sender"]
    pulls = run.get("pull_requests") or []
    if not pulls:
        return None
    return CommandRequest(
        **repo_args(data),
        number=int(pulls[0]["number"]),
        is_pr=True,
        comment_id=0,
        commenter=str(sender["login"]),
        commenter_type=str(sender.get("type") or "User"),
        command=command,
        sha=str(run["head_sha"]),
        created_at=str(run.get("completed_at") or "") or None,
        via="check_run",
        event_id=event_id,
        plan_digest=plan_digest,
    )


@router.register("check_run", action="rerequested")
async def rerun(event: Event, delivery: Delivery) -> None:
    data = event.data
    run = data["check_run"]
    if "installation" not in data or run.get("name") not in OUR_RUNS:
        delivery.ignore("not a plangate check run")
        return
    command = _command(data, "plan", str(event.delivery_id))
    if command is not None:
        job = job_id("rerun", command.repo_id, run["id"], event.delivery_id)
        await delivery.enqueue(delivery.commands, Jobs.HANDLE_COMMAND, job, command)
        return
    group = (run.get("check_suite") or {}).get("head_branch") or ""
    if not group.startswith("gh-readonly-queue/"):
        delivery.ignore("no pull request or merge group to re-plan")
        return
    request = GroupRequest(**repo_args(data), head_sha=str(run["head_sha"]), head_ref=f"refs/heads/{group}")
    job = job_id("mq", request.repo_id, request.head_sha, "rerun", run["id"])
    await delivery.enqueue(delivery.plans, Jobs.PLAN_MERGE_GROUP, job, request)


@router.register("check_run", action="requested_action")
async def button(event: Event, delivery: Delivery) -> None:
    data = event.data
    run = data["check_run"]
    identifier = str((data.get("requested_action") or {}).get("identifier") or "")
    if "installation" not in data or not identifier.startswith(APPROVE):
        delivery.ignore("not the Approve destroys button")
        return
    request = _command(data, "approve-destroy", str(event.delivery_id), identifier.removeprefix(APPROVE))
    if request is None:
        delivery.ignore("no pull request to approve on")
        return
    job = job_id("button", request.repo_id, run["id"], event.delivery_id)
    await delivery.enqueue(delivery.commands, Jobs.HANDLE_COMMAND, job, request)
