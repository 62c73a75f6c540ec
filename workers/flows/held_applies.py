"""Commands on a PR or issue whose apply is held (blocked on gated changes, or died mid-apply).

`/approve-destroy` approves exactly the held changes at the pushed SHA, each bound to the object (or
code) the blocked comment named, and re-runs those applies: plan again, check the changes are still
covered (state may have moved), apply. `/plan` re-runs them as they are (the route back after an apply
died or failed).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from core.approvals import Approval, Refusal, approval_for, approval_marker, timing_refusal
from core.config import RepoConfig
from core.contract import CommandRequest
from core.gated import Gated, plan_digest, published_digest
from core.render.marker import parse_marker
from core.render.replies import render_approved, render_not_allowed, render_planning, render_refusal
from workers.adapters.github import GitHub, issues, vcs
from workers.adapters.github.authors import Authors, of_pull, of_push, unapplied
from workers.adapters.github.permissions import may_plan
from workers.adapters.github.pulls import get_pull
from workers.adapters.github.repo_config import base_config, policy_ref
from workers.adapters.store import applies as apply_store
from workers.adapters.store import audit
from workers.adapters.store import gates as gate_store
from workers.adapters.store.applies import BlockedApply
from workers.context import WorkerContext
from workers.flows import restore
from workers.flows.gate_check import covered, may_approve_against
from workers.flows.outcome import Outcome


async def decide(ctx: WorkerContext, gh: GitHub, req: CommandRequest, held: list[BlockedApply]) -> Outcome:
    sha = held[-1].push.after  # the latest held push; older ones are superseded by it
    current = [b for b in held if b.push.after == sha]
    if req.command == "plan":
        allowed = await may_plan(gh, req.repo, req.commenter, req.commenter_type)
        if not allowed.allowed:
            return Outcome(
                render_not_allowed(req.commenter, allowed.reason, command="plan", reply_to=req.comment_id), "-1"
            )
        names = [b.project.name for b in current]
        return Outcome(render_planning(sha, names, reply_to=req.comment_id), "+1", reapply=current)
    return await _approve(ctx, gh, req, current, sha)


SETTLED = ("apply-result", "apply-superseded")  # markers of comments that end a held apply
SEALING_EDIT = 60  # seconds: plangate edits an issue it opened once, to add the held record it seals


async def from_github(ctx: WorkerContext, gh: GitHub, req: CommandRequest) -> list[BlockedApply]:
    """The held applies of this PR or issue that Redis lost, read back from the sealed records heading
    plangate's own blocked comments, minus those a later apply result or supersession settled. A blocked
    comment someone edited counts for nothing: what its readers saw may not have been plangate's text."""
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    found: list[tuple[int | None, dict[str, Any], int]] = []
    if not req.is_pr:
        found.append((None, await issues.get_issue(gh, req.repo, req.number), SEALING_EDIT))
    async for comment in issues.issue_comments(gh, req.repo, req.number):
        found.append((int(comment["id"]), comment, 0))
    held: dict[str, BlockedApply] = {}
    for comment_id, item, allowed_edit in found:
        if (item.get("user") or {}).get("login") != login:
            continue
        body = item.get("body")
        blocked = apply_store.held_from(body, ctx.records.marker_key, req.repo_id, req.number)
        if blocked is not None and _edited(item) <= allowed_edit:
            at = str(item.get("created_at") or "")
            held[blocked.project.identity] = replace(blocked, comment_id=comment_id, blocked_at=at or None)
            continue
        parsed = parse_marker(body)
        if parsed is not None and parsed[0] in SETTLED:
            held = {k: b for k, b in held.items() if b.project.name != parsed[1].get("project")}
    for blocked in held.values():
        apply_store.save_blocked(ctx.records, blocked)
    return list(held.values())


def _edited(item: dict[str, Any]) -> float:
    """Seconds between a comment's creation and its last edit (GitHub's clock)."""
    try:
        created = datetime.fromisoformat(str(item["created_at"]).replace("Z", "+00:00"))
        updated = datetime.fromisoformat(str(item.get("updated_at") or item["created_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return float("inf")
    return (updated - created).total_seconds()


async def authors_of(
    ctx: WorkerContext, gh: GitHub, repo: str, repo_id: int, held: list[BlockedApply], policy: RepoConfig
) -> Authors:
    """A merged PR's authors as GitHub shows them now (a direct push's from its webhook), and those of
    the held projects' changes not applied yet."""
    first = held[0]
    if first.is_pr:
        pull = await get_pull(gh, repo, first.number)
        trusted = policy.destroy_approvers.trusted_bots
        authors = await of_pull(gh, ctx.records, repo=repo, repo_id=repo_id, pull=pull, trusted_bots=trusted)
    else:
        authors = of_push(first.authors)
    for one in held:
        authors = authors.merged(unapplied(ctx.records, repo_id, one.project.identity))
    return authors


async def _judge(
    ctx: WorkerContext, gh: GitHub, req: CommandRequest, held: list[BlockedApply], sha: str
) -> Approval | Refusal:
    """The held changes as the blocked comments (or issue) named them, if those still show plangate's text
    and were written before the command."""
    gates: dict[str, dict[str, Gated]] = {b.project.identity: b.gates() for b in held}
    pages = [b.comment_id for b in held if b.comment_id]
    shown = await restore.check_shown(ctx, gh, repo=req.repo, repo_id=req.repo_id, comment_ids=pages)
    issue = await restore.check_issue(ctx, gh, repo=req.repo, repo_id=req.repo_id, number=req.number)
    if not (shown.intact and issue.intact):
        return Refusal(
            "someone else had changed what plangate wrote about this blocked apply, so what you read may not "
            "have been it; plangate put its text back — look again and re-approve"
        )
    stamps = [b.blocked_at for b in held]
    blocked_at = max(s for s in stamps if s) if stamps and all(stamps) else None  # after every blocked comment
    restored = [t for t in (shown.restored, issue.restored) if t]
    published = max([blocked_at, *restored]) if blocked_at else None
    late = timing_refusal(sha, named_sha=req.sha, comment_at=req.created_at, published_at=published)
    digest = published_digest({identity: plan_digest(sha, identity, g) for identity, g in gates.items()})
    return late or approval_for(gates, sha, req.commenter, req.projects, plan=digest)


async def _approve(ctx: WorkerContext, gh: GitHub, req: CommandRequest, held: list[BlockedApply], sha: str) -> Outcome:
    where = {"repo": req.repo, "number": req.number, "sha": sha, "by": req.commenter, "held": True}
    policy = await base_config(gh, req.repo, policy_ref(held[0].push))  # as the held apply itself is judged
    allowed = await may_approve_against(gh, req, policy, authors_of(ctx, gh, req.repo, req.repo_id, held, policy))
    if not allowed.allowed:
        audit.record(ctx.redis, "refused", reason=allowed.reason, **where)
        return Outcome(render_not_allowed(req.commenter, allowed.reason, reply_to=req.comment_id), "-1")
    decision = await _judge(ctx, gh, req, held, sha)
    if isinstance(decision, Refusal):
        audit.record(ctx.redis, "refused", reason=decision.reason, **where)
        return Outcome(render_refusal(decision.reason, reply_to=req.comment_id), "confused")
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    known = await gate_store.load_approvals(
        ctx.records, gh, repo=req.repo, repo_id=req.repo_id, number=req.number, sha=sha, bot_login=login
    )
    gate_store.add_approval(ctx.records, req.repo_id, req.number, sha, known, decision)
    gates = {b.project.identity: b.gates() for b in held}
    cov = await covered(gh, gates, [*known, decision], sha=sha, rules=policy.rules)
    audit.record(ctx.redis, "approved", destroys=len(decision.pairs), complete=cov.complete, **where)
    approved_projects = {project for project, _ in decision.pairs}
    rerun = [b for b in held if b.project.identity in approved_projects]
    seal = approval_marker(
        decision, key=ctx.records.marker_key, repo_id=req.repo_id, number=req.number, reply_to=req.comment_id
    )
    return Outcome(render_approved(decision, cov, marker=seal), "+1", reapply=rerun)
