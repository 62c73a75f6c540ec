"""The last word on a job that failed for good (workers.watchdog hands it here): the reports it owed,
made terminal and true, and one comment saying what was lost and how to run it again.

Only what is still owed is said: a plan a newer push superseded, or one published meanwhile (a
`/plan` that ran after), is left alone. A plan is never given a verdict here: `plangate/destroy`
becomes `error`, which branch protection treats as not passing.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from core.contract import APPLY_CONTEXT, ApplyConversation, CommandRequest, GroupRequest, PlanRequest, PushRequest
from core.render.apply_status import apply_status
from core.render.lost import (
    apply_lost_status,
    apply_unknown_status,
    lost_plan_statuses,
    render_apply_lost,
    render_command_lost,
    render_plan_lost,
    why_text,
)
from workers.adapters.github import vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.store import gates as gate_store
from workers.context import WorkerContext
from workers.flows import failed_applies, push_apply
from workers.flows.pr_publish import bot_login, is_current

log = logging.getLogger("plangate.watchdog")


async def say(ctx: WorkerContext, job: str, kwargs: dict[str, Any], why: str) -> str:
    """What was said for the failed job `job` (its function's name) run with `kwargs`."""
    said = why_text(why, outage_seconds=ctx.settings.outage_window)
    request = kwargs.get("request")
    if isinstance(request, PlanRequest):
        outcome = await _plan(ctx, request, said)
    elif isinstance(request, GroupRequest):
        outcome = await _group(ctx, request, said)
    elif isinstance(request, PushRequest):
        outcome = await _apply_dispatch(ctx, request, said)
    elif isinstance(request, CommandRequest):
        outcome = await _command(ctx, request, said)
    elif isinstance(kwargs.get("push"), PushRequest) and isinstance(kwargs.get("where"), ApplyConversation):
        outcome = await _apply_finish(ctx, kwargs["push"], said)
    else:
        outcome = "nothing owed"
    log.warning(json.dumps({"job": job, "why": why, "outcome": outcome}))
    return outcome


async def _plan(ctx: WorkerContext, req: PlanRequest, said: str) -> str:
    if not is_current(ctx, req):
        return "superseded"
    if gate_store.load_plan(ctx.records, req.repo_id, req.pr, req.sha) is not None:
        return "published meanwhile"
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        for context, state, description in lost_plan_statuses(said):
            await vcs.set_status(gh, req.repo, req.sha, context, state, description)
        body = render_plan_lost(pr=req.pr, sha=req.sha, why_said=said)
        login = await bot_login(ctx)
        await vcs.upsert_comments(
            gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=[body]
        )
    return "plan lost"


async def _group(ctx: WorkerContext, req: GroupRequest, said: str) -> str:
    """A merge group has no conversation: its required checks say it (the queue removes the group)."""
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        for context, state, description in lost_plan_statuses(said):
            await vcs.set_status(gh, req.repo, req.head_sha, context, state, description)
    return "group lost"


async def _apply_dispatch(ctx: WorkerContext, req: PushRequest, said: str) -> str:
    """The push's apply never reached a project: nothing was applied. The merged PR is told, and
    `/plan` there runs the apply of its merge again (workers.flows.commands)."""
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, *apply_lost_status(said))
        pr = await push_apply.merged_pr(gh, req.repo, req.after)
        if pr is not None:
            body = render_apply_lost(sha=req.after, why_said=said)
            await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=pr.number, body=body)
    return "apply lost"


async def _apply_finish(ctx: WorkerContext, push: PushRequest, said: str) -> str:
    """The combined `plangate/apply` from the outcomes the projects' jobs recorded (each told its own
    story on the PR); none recorded (Redis lost them) is an error."""
    known = push_apply.outcomes(ctx, push)
    still = failed_applies.still_failed(ctx, push.repo_id, set(known))
    state = apply_status(known, still) if known else apply_unknown_status(said)
    async with installation_client(ctx.tokens, push.installation_id, ctx.settings.api_url) as gh:
        await vcs.set_status(gh, push.repo, push.after, APPLY_CONTEXT, *state)
    return "apply reported"


async def _command(ctx: WorkerContext, req: CommandRequest, said: str) -> str:
    body = render_command_lost(command=req.command, reply_to=req.comment_id or None, why_said=said)
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.number, body=body)
    return "command lost"
