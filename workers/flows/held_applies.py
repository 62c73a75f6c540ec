"""Commands on a PR or issue whose apply is held (blocked on destroys, or died mid-apply).

`/approve-destroy` approves exactly the held destroy set at the pushed SHA and re-runs those
applies: plan again, check the destroy set is still covered (state may have moved), apply.
`/plan` re-runs them as they are (the route back after an apply died or failed).
"""

from __future__ import annotations

from gidgethub.abc import GitHubAPI

from core.approvals import Refusal, approval_for, timing_refusal
from core.contract import CommandRequest
from core.render.replies import render_approved, render_not_allowed, render_planning, render_refusal
from workers.adapters.github import vcs
from workers.adapters.github.permissions import may_approve, may_plan
from workers.adapters.github.repo_config import base_config
from workers.adapters.store import audit
from workers.adapters.store import gates as gate_store
from workers.adapters.store.applies import BlockedApply
from workers.context import WorkerContext
from workers.flows.gate_check import covered
from workers.flows.outcome import Outcome


async def decide(ctx: WorkerContext, gh: GitHubAPI, req: CommandRequest, held: list[BlockedApply]) -> Outcome:
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


async def _approve(
    ctx: WorkerContext, gh: GitHubAPI, req: CommandRequest, held: list[BlockedApply], sha: str
) -> Outcome:
    where = {"repo": req.repo, "number": req.number, "sha": sha, "by": req.commenter, "held": True}
    policy = await base_config(gh, req.repo, req.default_branch)
    allowed = await may_approve(
        gh,
        repo=req.repo,
        login=req.commenter,
        user_type=req.commenter_type,
        authors=held[0].authors,
        policy=policy.destroy_approvers,
        authored="opened this pull request" if held[0].is_pr else "pushed this commit or authored one of its commits",
    )
    if not allowed.allowed:
        audit.record(ctx.redis, "refused", reason=allowed.reason, **where)
        return Outcome(render_not_allowed(req.commenter, allowed.reason, reply_to=req.comment_id), "-1")
    destroys = {b.project.identity: list(b.destroys) for b in held}
    stamps = [b.blocked_at for b in held]
    blocked_at = max(s for s in stamps if s) if stamps and all(stamps) else None  # after every blocked comment
    late = timing_refusal(sha, named_sha=req.sha, comment_at=req.created_at, published_at=blocked_at)
    decision = late or approval_for(destroys, sha, req.commenter, req.projects)
    if isinstance(decision, Refusal):
        audit.record(ctx.redis, "refused", reason=decision.reason, **where)
        return Outcome(render_refusal(decision.reason, reply_to=req.comment_id), "confused")
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    known = await gate_store.load_approvals(
        ctx.records, gh, repo=req.repo, repo_id=req.repo_id, number=req.number, sha=sha, bot_login=login
    )
    gate_store.add_approval(ctx.records, req.repo_id, req.number, sha, known, decision)
    cov = await covered(gh, destroys, [*known, decision], sha=sha, rules=policy.destroy_rules)
    audit.record(ctx.redis, "approved", destroys=len(decision.pairs), complete=cov.complete, **where)
    approved_projects = {project for project, _ in decision.pairs}
    rerun = [b for b in held if b.project.identity in approved_projects]
    return Outcome(render_approved(decision, cov, reply_to=req.comment_id), "+1", reapply=rerun)
