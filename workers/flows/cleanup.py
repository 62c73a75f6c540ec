"""After GitHub closed something, what plangate still holds for it is dropped, and its plan, when it
still waits in the queue, never runs (the web process enqueues these; core.contract_cleanup)."""

from __future__ import annotations

import json
import logging

from core.contract_cleanup import GroupGone, PullClosed
from plumbing.runlog import record_run
from workers.adapters.queue import waiting
from workers.adapters.store import closed_pulls, merge_groups
from workers.context import WorkerContext

log = logging.getLogger("plangate.cleanup")


def pull_closed(ctx: WorkerContext, req: PullClosed) -> str:
    """The closed PR is re-planned no more, its head's gate no longer holds another PR at that commit,
    its head's plan is cancelled if it has not started, and the run log says it closed (the status page
    shows it open no more). What became of that plan."""
    closed_pulls.forget(ctx.redis, req.repo_id, req.number, req.head_sha)
    if req.repo:
        result = "merged" if req.merged else "closed"
        record_run(ctx.redis, kind="closed", repo=req.repo, number=req.number, sha=req.head_sha, result=result)
    return _cancel(ctx, req.plan_job, started="plan already running or done")


def group_gone(ctx: WorkerContext, req: GroupGone) -> str:
    """The group's results are published to no one, and its plan is cancelled if it has not started."""
    merge_groups.mark_gone(ctx.redis, req.repo_id, req.head_sha)
    return _cancel(ctx, req.plan_job, started="group plan already running or done: its results are dropped")


def _cancel(ctx: WorkerContext, job_id: str, *, started: str) -> str:
    """What became of the job: "cancelled", or why nothing was (`started`: it ran already)."""
    found = waiting.cancel_if_queued(ctx.redis, job_id)
    outcome = {"cancelled": "cancelled", "started": started, "missing": "nothing queued"}[found]
    log.info(json.dumps({"job": job_id, "outcome": outcome}))
    return outcome
