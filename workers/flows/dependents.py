"""A project whose dependency did not apply at the pushed SHA: held back, then applied by the same fix.

The order (core.apply_order) is kept by RQ: a dependent's apply job waits for its dependencies' jobs to
end, however they ended. It then reads how they ended at that SHA: a failed, held, died or lost one (or
one whose outcome is gone) stops it before anything is planned, says "waiting on NAME (failed)" and is
remembered (workers.adapters.store.waiting_applies). When NAME later applies successfully, at that SHA
(an /approve-destroy, a re-run) or at a newer one, the applies it held are enqueued again as they were:
the same pushed SHA and conversation, a fresh plan, the gate as always, and a newer apply of the
project wins over them (workers.flows.superseded).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from core.apply_order import Holdup, holdup
from core.apply_outcome import ApplyOutcome, Ending
from core.contract import ApplyConversation, PushRequest
from core.projects import Project
from core.render.apply import render_waiting
from plumbing.runlog import record_run
from workers.adapters.github import vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.queue import fanout
from workers.adapters.store import audit, waiting_applies
from workers.adapters.store.waiting_applies import WaitingApply
from workers.context import WorkerContext
from workers.flows import push_apply, superseded

log = logging.getLogger("plangate.apply")
RELEASES = frozenset({Ending.APPLIED, Ending.NOOP})  # a successful apply at the branch: its dependents go on


def holdup_of(
    ctx: WorkerContext, req: PushRequest, project: Project, waits: Mapping[str, tuple[str, ...]]
) -> Holdup | None:
    """What holds `project` back at the pushed SHA, from its dependencies' recorded outcomes; None: go on."""
    if not waits.get(project.name):
        return None
    return holdup(project.name, waits, push_apply.outcomes(ctx, req))


async def wait(
    ctx: WorkerContext,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    waits: Mapping[str, tuple[str, ...]],
    held_back: Holdup,
    page: str | None = None,
) -> ApplyOutcome:
    """Remember the held apply before saying so (a death in between leaves it remembered, never lost).
    The dependency may have applied successfully since its apply here ended, before the record was
    written: its release would have missed it, so the record is checked against its last success (each
    side writes before it reads, so one of the two always sees the other). `page`: the held apply's run (if
    it has a page), which the run log names."""
    order = {name: tuple(deps) for name, deps in waits.items()}
    waiting_applies.record(ctx.records, WaitingApply(req, project, where, held_back.dependency, order))
    since = waiting_applies.last_success(ctx.records, req.repo_id, held_back.dependency)
    if since is not None:
        await _release(ctx, req, held_back.dependency, since)
    said = held_back.text()
    if where.number is not None:
        body = render_waiting(project=project.name, sha=req.after, holdup=said, dependency=held_back.dependency)
        async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
            await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=where.number, body=body)
    audit.record(ctx.redis, "apply-waiting", repo=req.repo, sha=req.after, project=project.name, on=said)
    record_run(
        ctx.redis,
        kind="apply",
        repo=req.repo,
        number=where.number,
        project=project.name,
        sha=req.after,
        summary="not planned",
        gate="failure",
        approver="",
        result=said,
        **({"run": page} if page is not None else {}),
    )
    return ApplyOutcome(Ending.WAITING)


async def release(ctx: WorkerContext, req: PushRequest, project: Project, outcome: ApplyOutcome) -> None:
    """`project`'s apply ended: when it applied successfully, the applies it held at this commit or an
    older one are enqueued again. Called again by a re-run of an apply that had reported (a death may
    have cut the release short): a record goes only once its apply is enqueued, so the worst a death does
    is enqueue it twice, and the second run plans afresh and finds nothing to do."""
    if outcome.ending not in RELEASES:
        return
    waiting_applies.succeeded(ctx.records, req.repo_id, project.name, req.after)  # before reading who waits
    await _release(ctx, req, project.name, req.after)


async def _release(ctx: WorkerContext, req: PushRequest, dependency: str, applied_at: str) -> None:
    """Enqueue again the applies `dependency` held at `applied_at` or an older commit, each without it
    among the dependencies it still waits on (the others are read again at its SHA). One held at a newer
    commit stays: what that commit needs of the dependency is still not applied."""
    held = waiting_applies.held_by(ctx.records, req.repo_id, dependency)
    if not held:
        return
    released = []
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        for waiting in held:
            at = waiting.push.after
            if at != applied_at and not await superseded.is_newer(gh, req.repo, at, applied_at):
                continue
            name = waiting.project.name
            waits = {**waiting.waits, name: tuple(d for d in waiting.waits.get(name, ()) if d != dependency)}
            timeout = ctx.settings.tf_timeout
            fanout.enqueue_applies(ctx.redis, waiting.push, [waiting.project], waiting.where, timeout, waits=waits)
            log.info(json.dumps({"repo": req.repo, "released": name, "sha": at, "by": dependency, "at": applied_at}))
            released.append(waiting)
    waiting_applies.forget(ctx.records, released)
