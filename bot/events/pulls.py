"""pull_request: plan the head SHA; on close, have a job drop the queued plan."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.contract import Jobs, PlanRequest, RepoTarget, job_id
from core.contract_cleanup import PullClosed
from core.trigger import Trigger, Why

from .context import Delivery, repo_args

router = Router()


def plan_job_id(repo_id: int, pr: int, sha: str) -> str:
    """One plan per (repo, PR, SHA): opened + synchronize for one SHA, or a redelivery, plan once."""
    return job_id("plan", repo_id, pr, sha)


def plan_request(data: dict[str, Any]) -> PlanRequest:
    pusher = str((data.get("sender") or {}).get("login") or "") if data.get("action") == "synchronize" else ""
    return PlanRequest.of_pull(RepoTarget(**repo_args(data)), data["pull_request"], pusher=pusher)


async def plan_head(event: Event, delivery: Delivery) -> None:
    if "installation" not in event.data:
        delivery.ignore("no installation in the payload")
        return
    request = plan_request(event.data)
    await delivery.enqueue(delivery.plans, Jobs.PLAN_PR, plan_job_id(request.repo_id, request.pr, request.sha), request)


for _action in ("opened", "reopened", "synchronize", "ready_for_review"):
    router.add(plan_head, "pull_request", action=_action)


@router.register("pull_request", action="edited")
async def plan_new_base(event: Event, delivery: Delivery) -> None:
    """A PR retargeted at another branch is another change: planned again against its new base (a check
    left green by the old base must not let it merge)."""
    if "installation" not in event.data or "base" not in (event.data.get("changes") or {}):
        delivery.ignore("not a change of base")
        return
    base = str((event.data["pull_request"].get("base") or {}).get("sha") or "")
    request = replace(plan_request(event.data), trigger=Trigger(Why.BASE_CHANGED, base))
    job = job_id("plan", request.repo_id, request.pr, request.sha, request.trigger)
    await delivery.enqueue(delivery.plans, Jobs.PLAN_PR, job, request)


@router.register("pull_request", action="closed")
async def drop_queued(event: Event, delivery: Delivery) -> None:
    """A closed PR needs no plan: a job (workers.flows.cleanup) cancels its head's plan if it has not
    started, stops re-planning it, lets its head's gate no longer hold another PR at the same commit, and
    records the close in the run log (the status page lists the PR as open no more)."""
    pull = event.data["pull_request"]
    repo_id, number, sha = int(event.data["repository"]["id"]), int(pull["number"]), str(pull["head"]["sha"])
    closed = PullClosed(
        repo_id,
        number,
        sha,
        plan_job_id(repo_id, number, sha),
        str(pull.get("closed_at") or ""),
        repo=str(event.data["repository"]["full_name"]),
        merged=pull.get("merged") is True,
    )
    await delivery.enqueue(delivery.commands, Jobs.PULL_CLOSED, closed.job_id(), closed)
