"""Slash commands on a pull request: /approve-destroy, /plan, /help, and near misses; in a drift issue,
/plan and /accept-drift (workers.flows.accept_drift); in a failed-apply or drift issue, /apply
(workers.flows.apply_command).

Every command gets an answer: `eyes` on receipt, then a reply comment and a reaction that
says how it ended (+1 done, -1 not allowed, confused nothing to do or not a command).
Approvals are judged against the default branch's policy and the latest plan of the head SHA.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.approvals import Approval, Refusal, approval_for, approval_marker, timing_refusal
from core.commands import NearMiss
from core.config import ConfigError, RepoConfig
from core.contract import DESTROY_CONTEXT, CommandRequest, PlanRequest, PushRequest
from core.drift_schedule import DriftTarget
from core.projects import identity_label
from core.render.accept_drift import COMMAND
from core.render.replies import (
    approval_status,
    in_reply_to_review,
    render_approved,
    render_help,
    render_near_miss,
    render_not_allowed,
    render_plan_running,
    render_planning,
    render_refusal,
)
from core.trigger import Trigger, Why
from plumbing.runlog import record_run
from workers.adapters.github import GitHub, commits, reactions, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.authors import Authors, of_pull, unapplied
from workers.adapters.github.permissions import may_plan
from workers.adapters.github.pulls import get_pull
from workers.adapters.github.repo_config import base_config
from workers.adapters.queue import fanout, follow_ups
from workers.adapters.store import applies as apply_store
from workers.adapters.store import audit, drift_issues
from workers.adapters.store import gates as gate_store
from workers.context import WorkerContext
from workers.flows import accept_drift, apply_command, held_applies, restore, run_pages
from workers.flows.gate_check import at_commit, covered, may_approve_against
from workers.flows.outcome import Outcome


async def run(ctx: WorkerContext, req: CommandRequest) -> str:
    """Answer the command, then enqueue what it leads to, each under an id of its own; the reaction."""
    outcome = await handle(ctx, req)
    if outcome is None:
        return "ignored"
    for held in outcome.reapply:
        fanout.enqueue_applies(ctx.redis, held.push, [held.project], held.where(), ctx.settings.tf_timeout)
    if outcome.repush is not None:
        follow_ups.apply_again(ctx.redis, outcome.repush, req.comment_id or req.event_id)
    if outcome.redrift is not None:
        follow_ups.check_drift(ctx.redis, outcome.redrift)
    if outcome.replan is not None:
        follow_ups.plan_again(ctx.redis, outcome.replan)
    if outcome.accept is not None:
        follow_ups.accept_drift(ctx.redis, req, *outcome.accept, ctx.settings.tf_timeout)
    return outcome.reaction


async def handle(ctx: WorkerContext, req: CommandRequest) -> Outcome | None:
    """None: not plangate's conversation (an issue another App opened), so no answer at all."""
    if not req.is_pr:
        login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
        if req.issue_author.casefold() != login.casefold():
            return None
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        await _react(gh, req, "eyes")
        outcome = await _decide(ctx, gh, req)
        if not (req.via == "check_run" and req.command == "plan" and outcome.reaction == "+1"):
            await _answer(ctx, gh, req, outcome.reply)  # a Re-run needs no "planning" reply
        await _react(gh, req, outcome.reaction)
    return outcome


async def _answer(ctx: WorkerContext, gh: GitHub, req: CommandRequest, body: str) -> None:
    """Where the command was written: in its review thread, else in the conversation (naming the review
    a command in a review's body came from)."""
    if req.via == "review_comment":
        await vcs.reply_in_thread(gh, repo=req.repo, number=req.number, thread=req.thread, body=body)
        return
    if req.via == "review":
        body = in_reply_to_review(body, reviewer=req.commenter, url=req.source_url)
    await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.number, body=body)


async def _react(gh: GitHub, req: CommandRequest, content: str) -> None:
    """On the command's comment where GitHub has reactions: none on a review, nor on a button press."""
    if req.via == "comment" and req.comment_id:
        await reactions.react_to_comment(gh, req.repo, req.comment_id, content)
    elif req.via == "review_comment":
        await reactions.react_to_review_comment(gh, req.repo, req.comment_id, content)


async def _decide(ctx: WorkerContext, gh: GitHub, req: CommandRequest) -> Outcome:
    if req.near_miss is not None:
        written, suggestion, reason = req.near_miss
        return Outcome(render_near_miss(NearMiss(written, suggestion, reason), reply_to=req.comment_id), "confused")
    if req.command == "apply":
        return await apply_command.decide(ctx, gh, req)
    held = apply_store.blocked_on(ctx.records, req.repo_id, req.number)
    pull: dict[str, Any] | None = None
    if not held and req.command in ("approve-destroy", "plan"):  # applies are held on merged PRs and issues
        pull = await get_pull(gh, req.repo, req.number) if req.is_pr else None
        if pull is None or pull.get("merged"):
            held = await held_applies.from_github(ctx, gh, req)  # what a Redis that lost it held
    if held and req.command in ("approve-destroy", "plan"):
        return await held_applies.decide(ctx, gh, req, held)
    if req.command == COMMAND:
        return await accept_drift.decide(ctx, gh, req)
    if not req.is_pr and req.command == "plan":
        watched = drift_issues.watched(ctx.redis, req.repo_id, req.number)
        if watched is not None:
            return await _recheck_drift(gh, req, watched)
    if not req.is_pr:
        text = "plangate commands work on pull requests (and on the issues plangate opens for blocked applies)."
        return Outcome(render_refusal(text, command=req.command or "help", reply_to=req.comment_id), "confused")
    pull = pull or await get_pull(gh, req.repo, req.number)
    if req.command == "plan" and pull.get("merged"):
        return await _rerun_merge(gh, req, pull)
    sha = str(pull["head"]["sha"])
    if req.command == "approve-destroy" and req.reviewed_sha and req.reviewed_sha != sha:
        reason = (
            f"this review is on {req.reviewed_sha[:7]}, not on the head {sha[:7]}, so it approves nothing; "
            "review the latest commit and approve its plan"
        )
        return Outcome(render_refusal(reason, reply_to=req.comment_id), "confused")
    try:
        policy = await base_config(gh, req.repo, req.default_branch)
    except ConfigError as exc:
        reason = f"the default branch's .plangate.yml is invalid ({exc}); fix it first"
        return Outcome(render_refusal(reason, command=req.command or "help", reply_to=req.comment_id), "confused")
    record = gate_store.load_plan(ctx.records, req.repo_id, req.number, sha)
    if req.command == "help":
        planned = sorted({identity_label(p) for p in record.gates}) if record else []
        return Outcome(render_help(req.repo, policy, planned=planned, sha=sha, reply_to=req.comment_id), "+1")
    if req.command == "plan":
        return await _plan(gh, req, pull, sha)
    return await _approve(ctx, gh, req, policy, record, pull)


async def _plan(gh: GitHub, req: CommandRequest, pull: dict[str, Any], sha: str) -> Outcome:
    allowed = await may_plan(gh, req.repo, req.commenter, req.commenter_type)
    if not allowed.allowed:
        return Outcome(render_not_allowed(req.commenter, allowed.reason, command="plan", reply_to=req.comment_id), "-1")
    trigger = Trigger(Why.COMMAND, str(req.comment_id)) if req.comment_id else Trigger(Why.RERUN, req.event_id)
    replan = PlanRequest.of_pull(req, pull, trigger=trigger, only=tuple(req.projects))
    return Outcome(render_planning(sha, req.projects, reply_to=req.comment_id), "+1", replan=replan)


async def _rerun_merge(gh: GitHub, req: CommandRequest, pull: dict[str, Any]) -> Outcome:
    """`/plan` on a merged PR with no held apply (its apply was lost): plan → gate → apply its merge
    commit again, while that commit is still its branch's head. Once the branch moved on, applying
    it would undo what came after: the newer commit's own apply covers the projects it touched."""
    allowed = await may_plan(gh, req.repo, req.commenter, req.commenter_type)
    if not allowed.allowed:
        return Outcome(render_not_allowed(req.commenter, allowed.reason, command="plan", reply_to=req.comment_id), "-1")
    merged, base = str(pull.get("merge_commit_sha") or ""), str(pull["base"]["ref"])
    head = await commits.branch_head(gh, req.repo, base)
    if head != merged:
        reason = (
            f"{base} has moved on to {head[:7]} since this merge; plangate applies only the head of {base}, "
            f"and the apply of {head[:7]} (or `/plan` on its PR) covers every project its changes touched"
        )
        return Outcome(render_refusal(reason, command="plan", reply_to=req.comment_id), "confused")
    push = PushRequest(**req.target(), before=str(pull["base"]["sha"]), after=merged, branch=base)
    return Outcome(render_planning(merged, reply_to=req.comment_id), "+1", repush=push)


async def _recheck_drift(gh: GitHub, req: CommandRequest, watched: dict[str, Any]) -> Outcome:
    """`/plan` in a drift issue: check that project again now."""
    allowed = await may_plan(gh, req.repo, req.commenter, req.commenter_type)
    if not allowed.allowed:
        return Outcome(render_not_allowed(req.commenter, allowed.reason, command="plan", reply_to=req.comment_id), "-1")
    target = replace(DriftTarget.from_plain(watched["target"]), project=str(watched["project"]["name"]))
    reply = render_planning(req.default_branch, [str(target.project)], reply_to=req.comment_id)
    return Outcome(reply, "+1", redrift=target)


async def _approve(
    ctx: WorkerContext,
    gh: GitHub,
    req: CommandRequest,
    policy: RepoConfig,
    record: gate_store.PlanRecord | None,
    pull: dict[str, Any],
) -> Outcome:
    sha = str(pull["head"]["sha"])
    where = {"repo": req.repo, "pr": req.number, "sha": sha, "by": req.commenter}
    if record is None:
        return Outcome(render_plan_running(sha, reply_to=req.comment_id), "confused")
    allowed = await may_approve_against(gh, req, policy, _authors(ctx, gh, req, policy, pull, record))
    if not allowed.allowed:
        audit.record(ctx.redis, "refused", reason=allowed.reason, **where)
        return Outcome(render_not_allowed(req.commenter, allowed.reason, reply_to=req.comment_id), "-1")
    decision = await _judge(ctx, gh, req, record, sha)
    if isinstance(decision, Refusal):
        audit.record(ctx.redis, "refused", reason=decision.reason, **where)
        return Outcome(render_refusal(decision.reason, reply_to=req.comment_id), "confused")
    return await _record_approval(ctx, gh, req, record, decision, where, policy)


async def _authors(
    ctx: WorkerContext,
    gh: GitHub,
    req: CommandRequest,
    policy: RepoConfig,
    pull: dict[str, Any],
    record: gate_store.PlanRecord,
) -> Authors:
    """Every author of the PR as GitHub shows it now, and of its projects' changes not applied yet."""
    trusted = policy.destroy_approvers.trusted_bots
    authors = await of_pull(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, pull=pull, trusted_bots=trusted)
    for identity in record.gates:
        authors = authors.merged(unapplied(ctx.records, req.repo_id, identity))
    return authors


async def _judge(
    ctx: WorkerContext, gh: GitHub, req: CommandRequest, record: gate_store.PlanRecord, sha: str
) -> Approval | Refusal:
    """What the approver can have seen, checked before it is approved: a plan that ran, the same plan the
    button's page showed, a plan comment nobody else changed, published before the command."""
    if record.failed:
        failed = ", ".join(f"`{identity_label(name)}`" for name in record.failed)
        return Refusal(f"the plan failed at {sha[:7]} for {failed}; fix it and approve the new plan")
    if req.via == "check_run" and not (req.plan_digest and record.digest.startswith(req.plan_digest)):
        return Refusal(f"the plan of {sha[:7]} changed since the page you pressed the button on; look again")
    parts = vcs.known_comments(ctx.records, req.repo_id, req.number, "plan")
    shown = await restore.check_shown(ctx, gh, repo=req.repo, repo_id=req.repo_id, comment_ids=parts)
    if not shown.intact:
        return Refusal(
            "someone else had changed plangate's plan comment, so what you read may not have been the plan; "
            "plangate put its text back — look again and re-approve"
        )
    published = max(t for t in (record.published_at, shown.restored) if t) if record.published_at else None
    late = timing_refusal(
        sha, named_sha=req.sha, comment_at=req.created_at, published_at=published, inclusive=req.via == "check_run"
    )
    return late or approval_for(record.gates, sha, req.commenter, req.projects, plan=record.digest)


async def _record_approval(
    ctx: WorkerContext,
    gh: GitHub,
    req: CommandRequest,
    record: gate_store.PlanRecord,
    approval: Approval,
    where: dict[str, Any],
    policy: RepoConfig,
) -> Outcome:
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    known = await gate_store.load_approvals(
        ctx.records, gh, repo=req.repo, repo_id=req.repo_id, number=req.number, sha=approval.sha, bot_login=login
    )
    cov = await covered(gh, record.gates, [*known, approval], sha=approval.sha, rules=policy.rules)
    seal = approval_marker(
        approval, key=ctx.records.marker_key, repo_id=req.repo_id, number=req.number, reply_to=req.comment_id
    )
    reply = render_approved(approval, cov, marker=seal)
    gate_store.add_approval(ctx.records, req.repo_id, req.number, approval.sha, known, approval)
    audit.record(ctx.redis, "approved", destroys=len(approval.pairs), complete=cov.complete, **where)
    state, description = approval_status(cov)
    waiting = record.digest if not cov.complete and not cov.never else None
    now = gate_store.load_plan(ctx.records, req.repo_id, req.number, approval.sha)
    if now is not None and now.digest == record.digest:  # else a re-plan published meanwhile reports its own
        state, description = at_commit(ctx.records, req.repo_id, approval.sha, req.number, (state, description))
        link = run_pages.report_url(ctx.settings.public_url, list(record.gates), record.runs, cov, record.failed)
        await vcs.set_status(gh, req.repo, approval.sha, DESTROY_CONTEXT, state, description, link, approve=waiting)
    run_pages.write_gates(ctx.records, record.runs, record.gates, cov, (state, description))
    record_run(
        ctx.redis,
        kind="approval",
        repo=req.repo,
        number=req.number,
        project=", ".join(sorted(identity_label(p) for p in approval.addresses())),
        sha=approval.sha,
        summary=f"{len(approval.pairs)} destroy{'s' if len(approval.pairs) != 1 else ''} approved",
        gate=state,
        gate_description=description,
        approver=req.commenter,
    )
    return Outcome(reply, "+1")
