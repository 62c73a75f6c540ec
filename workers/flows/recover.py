"""Work Redis lost, found again on GitHub (Redis came back without its data: a restart with no
persistence, a failover to an empty replica, an eviction).

What GitHub still shows is the truth to start from: an open PR whose `plangate/plan` is pending at
its head lost its plan or its publish, so it is planned again (a plan changes nothing). A default
branch whose head shows `plangate/apply` pending lost its apply's records; it is not applied again
blindly (its authors and approvals went with them): the apply is reported lost and the merged PR told,
where `/plan` runs it again. Held applies need nothing here: their blocked comments carry them,
sealed (workers.flows.held_applies).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from core.contract import APPLY_CONTEXT, PLAN_CONTEXT, PlanRequest, RepoTarget
from core.render.lost import apply_unknown_status, render_apply_unknown
from core.trigger import Trigger, Why
from workers.adapters.github import GitHub, installations, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.commits import branch_head
from workers.adapters.github.pulls import open_pulls
from workers.adapters.queue import follow_ups
from workers.context import WorkerContext
from workers.flows import push_apply

log = logging.getLogger("plangate.recover")
LOST_RECORDS = "Redis restarted without plangate's records of it"


async def run(ctx: WorkerContext, now: datetime) -> int:
    """Redis came back without plangate's records (workers.rq_worker): the PRs whose plan was pending
    are planned again, all under one trigger naming the recovery; how many."""
    trigger = Trigger(Why.RECOVERED, f"{now:%Y%m%dT%H%M%S}")
    replans = await lost_work(ctx, trigger)
    for replan in replans:
        follow_ups.plan_again(ctx.redis, replan)
    return len(replans)


async def lost_work(ctx: WorkerContext, trigger: Trigger) -> list[PlanRequest]:
    """The PRs to plan again; pending applies are reported lost on the way."""
    replans: list[PlanRequest] = []
    for installation in await installations.installation_ids(ctx.app_id, ctx.private_key, ctx.settings.api_url):
        async with installation_client(ctx.tokens, installation, ctx.settings.api_url) as gh:
            async for repo in installations.repositories(gh):
                replans += await _repo(ctx, gh, installation, repo, trigger)
    log.warning(json.dumps({"recovered": "plans", "count": len(replans)}))
    return replans


async def _repo(
    ctx: WorkerContext, gh: GitHub, installation: int, repo: dict[str, Any], trigger: Trigger
) -> list[PlanRequest]:
    name, branch = str(repo["full_name"]), str(repo.get("default_branch") or "main")
    target = RepoTarget(installation, int(repo["id"]), name, str(repo["clone_url"]), branch)
    replans = []
    async for pull in open_pulls(gh, name):
        sha = str(pull["head"]["sha"])
        if await vcs.report_state(gh, name, sha, PLAN_CONTEXT) != "pending":
            continue
        replans.append(PlanRequest.of_pull(target, pull, trigger=trigger))
    head = await branch_head(gh, name, branch)
    if await vcs.report_state(gh, name, head, APPLY_CONTEXT) == "pending":
        await _apply_lost(ctx, gh, target, head)
    return replans


async def _apply_lost(ctx: WorkerContext, gh: GitHub, target: RepoTarget, sha: str) -> None:
    repo = target.repo
    await vcs.set_status(gh, repo, sha, APPLY_CONTEXT, *apply_unknown_status(LOST_RECORDS.lower()))
    pr = await push_apply.merged_pr(gh, repo, sha)
    if pr is not None:
        body = render_apply_unknown(sha=sha, why_said=LOST_RECORDS)
        await vcs.post_comment(gh, ctx.records, repo=repo, repo_id=target.repo_id, number=pr.number, body=body)
