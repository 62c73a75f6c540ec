"""A dismissed review takes its approval back: a review that carried `/approve-destroy` was an approval,
and GitHub's dismissal (by someone with write access) says it no longer stands.

The approvals plangate recorded in answer to that review stop counting at every SHA they were given
at; a sealed revocation in plangate's comment keeps them out when approvals are rebuilt from comments
(core.approval_markers), and the gate at the PR's head is reported again.
"""

from __future__ import annotations

from core.approval_markers import answered_approval, revocation_marker
from core.contract import DESTROY_CONTEXT, ReviewDismissal
from core.render.replies import approval_status, render_dismissed
from workers.adapters.github import vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.issues import issue_comments
from workers.adapters.github.pulls import get_pull
from workers.adapters.store import audit
from workers.adapters.store import gates as gate_store
from workers.context import WorkerContext
from workers.flows import gate_check, run_pages


async def on_dismissal(ctx: WorkerContext, req: ReviewDismissal) -> str:
    """What became of the dismissed review's approvals."""
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
        key, repo_id, number = ctx.records.marker_key, req.repo_id, req.number
        shas: set[str] = set()
        async for comment in issue_comments(gh, req.repo, number):
            if (comment.get("user") or {}).get("login") != login:
                continue
            found = answered_approval(comment.get("body"), key=key, repo_id=repo_id, number=number)
            if found is not None and found[0] == req.review_id and found[2].casefold() == req.reviewer.casefold():
                shas.add(found[1])
        if not shas:
            return "no approval"
        for sha in shas:
            known = await gate_store.load_approvals(
                ctx.records, gh, repo=req.repo, repo_id=repo_id, number=number, sha=sha, bot_login=login
            )
            kept = [a for a in known if a.approver.casefold() != req.reviewer.casefold()]
            gate_store.set_approvals(ctx.records, repo_id, number, sha, kept)
        seal = revocation_marker(
            key=key, repo_id=repo_id, number=number, approver=req.reviewer, shas=shas, review=req.review_id
        )
        body = render_dismissed(reviewer=req.reviewer, by=req.by, count=len(shas), marker=seal)
        await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=repo_id, number=number, body=body)
        audit.record(ctx.redis, "voided", repo=req.repo, pr=number, approver=req.reviewer, dismissed_by=req.by)
        pull = await get_pull(gh, req.repo, number)
        head = str(pull["head"]["sha"])
        record = gate_store.load_plan(ctx.records, repo_id, number, head)
        if head not in shas or record is None or not any(record.gates.values()):
            return "voided"
        policy = await gate_check.policy(gh, req.repo, req.default_branch)
        cov = await gate_check.coverage_at(
            ctx.records,
            gh,
            repo=req.repo,
            repo_id=repo_id,
            number=number,
            sha=head,
            gates=record.gates,
            bot_login=login,
            rules=policy.rules if policy is not None else None,
        )
        state = gate_check.at_commit(ctx.records, repo_id, head, number, approval_status(cov))
        waiting = record.digest if not cov.complete and not cov.never else None
        link = run_pages.report_url(ctx.settings.public_url, list(record.gates), record.runs, cov, record.failed)
        await vcs.set_status(gh, req.repo, head, DESTROY_CONTEXT, *state, link, approve=waiting)
        run_pages.write_gates(ctx.records, record.runs, record.gates, cov, state)
    return "voided"
