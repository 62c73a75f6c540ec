"""An older push never applies over a newer one, applied, blocked or failed (pushes can be handled out of
order: a retry, a job that waited its project's turn, an `/apply` that read the head before a push); a
newer push closes the older push's blocked apply, on its PR or issue."""

from __future__ import annotations

from dataclasses import replace

from core.apply_outcome import ApplyOutcome, Ending
from core.contract import PushRequest
from core.projects import Project
from core.render.apply import render_superseded
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.commits import compare
from workers.adapters.github.issues import close_issue
from workers.adapters.store import applies as apply_store
from workers.adapters.store import audit, failed_applies
from workers.adapters.store.applies import BlockedApply
from workers.context import WorkerContext
from workers.flows.push_apply import record_outcome


async def older_than_applied(ctx: WorkerContext, gh: GitHub, req: PushRequest, project: Project) -> Ending | None:
    """An older push never applies over a newer one (applied, blocked, or whose apply failed); a newer push
    closes the older blocked apply. How the older one ends: `not-applied` when a newer one applied,
    `superseded` when a newer one is held or failed (what this commit changed is not applied yet: its
    dependents wait, core.apply_order); None: go on."""
    blocked = apply_store.blocked_for_project(ctx.records, req.repo_id, project.identity)
    if blocked is not None and blocked.push.after != req.after:
        newer = await is_newer(gh, req.repo, blocked.push.after, req.after)
        if not newer:
            return Ending.SUPERSEDED
        await close_blocked(ctx, gh, req, blocked)
    # A newer push whose apply failed may have applied part of its change: an older commit would undo it.
    failed = failed_applies.of_project(ctx.redis, req.repo_id, project.identity)
    if failed is not None and failed.sha != req.after and not await is_newer(gh, req.repo, failed.sha, req.after):
        return Ending.SUPERSEDED
    applied = apply_store.last_applied(ctx.records, req.repo_id, project.identity)
    if applied is not None and applied != req.after and not await is_newer(gh, req.repo, applied, req.after):
        return Ending.NOT_APPLIED
    return None


async def is_newer(gh: GitHub, repo: str, old: str, new: str) -> bool:
    """Is `new` a descendant of `old` (or a force-push replacing it)? `behind` means it is older."""
    compared = await compare(gh, repo, old, new)
    return bool(compared.get("status") != "behind")


async def close_blocked(ctx: WorkerContext, gh: GitHub, req: PushRequest, blocked: BlockedApply) -> None:
    name, old = blocked.project.name, blocked.push.after
    body = render_superseded(project=name, old_sha=old, new_sha=req.after)
    await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=blocked.number, body=body)
    if not blocked.is_pr:
        await close_issue(gh, req.repo, blocked.number)
    apply_store.clear_blocked(ctx.records, blocked)
    record_outcome(ctx, replace(req, after=old), name, ApplyOutcome(Ending.SUPERSEDED))  # the newer may be held too
    audit.record(ctx.redis, "voided", repo=req.repo, project=name, sha=old, superseded_by=req.after)
