"""One project's apply at one pushed SHA: fresh plan → decide on its JSON → apply that plan file, or block.

Runs under the project's RateLimit (one job at a time per project, in push order). Each phase is
recorded before it starts (workers.adapters.store.apply_phases), so a job run again after its worker
died, or after a GitHub outage stopped it, does what is still true to do: plan afresh when nothing
was applied, report a death during `terraform apply` (humans decide what happens next), or post the
outcome an apply already had.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import replace

from core.apply_outcome import ApplyOutcome, Ending
from core.apply_outcome import held as held_outcome
from core.contract import ApplyConversation, PushRequest
from core.gate import Apply, Block
from core.plan import summary_line
from core.projects import Project
from core.render.apply import (
    render_apply_result,
    render_blocked,
    render_blocked_issue_title,
    render_not_applied,
)
from core.render.failed_apply import failure_detail
from plumbing.runlog import record_run
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.authors import applied
from workers.adapters.github.client import outage
from workers.adapters.github.repo_config import base_config, policy_ref
from workers.adapters.store import applies as apply_store
from workers.adapters.store import apply_phases, audit, waiting_applies
from workers.adapters.store.apply_phases import Phase
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.steps import Terraform
from workers.context import WorkerContext
from workers.flows import apply_decision, dependents, failed_applies, push_apply, run_records, superseded
from workers.flows.apply_decision import Decided
from workers.flows.push_apply import record_outcome

log = logging.getLogger("plangate.apply")


async def run(
    ctx: WorkerContext,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    run_id: str,
    waits: Mapping[str, tuple[str, ...]] | None = None,
) -> str:
    """The job body (`run_id`: its RQ job); returns the project's outcome for `plangate/apply`. A GitHub
    outage is raised while the run can still be taken up again (workers.rescheduling). `waits`: the
    push's order (core.apply_order) for this project and those before it; a dependency that did not
    apply at this SHA holds it (workers.flows.dependents). None: run again without it (a held apply
    approved, `/plan` on it): the push's order as it was kept, so it still waits on what did not apply."""
    if waits is None:
        waits = waiting_applies.order_at(ctx.records, req.repo_id, req.after)
    phase = apply_phases.read(ctx.records, run_id)
    if phase is not None and phase.name == "reported" and phase.outcome is not None:
        await dependents.release(ctx, req, project, phase.outcome)  # again, if a death cut it short
        return phase.outcome.stored()
    try:
        if phase is None or phase.name == "planning":
            apply_phases.write(ctx.records, run_id, Phase("planning"))
            held_back = dependents.holdup_of(ctx, req, project, waits or {})
            if held_back is not None:
                page = run_records.noted(
                    ctx, _page(req, project, where, run_id), project, "waiting", False, held_back.text()
                )
                outcome = await dependents.wait(ctx, req, project, where, waits or {}, held_back, page)
            else:
                outcome = await _run(ctx, req, project, where, run_id)
        else:
            if phase.name == "applying":
                run_records.died(ctx, run_id, project, "the worker died during terraform apply; it is not run again")
            outcome = await push_apply.settle(ctx, req, project, where, phase)
    except Exception as exc:
        now = apply_phases.read(ctx.records, run_id)
        if outage(exc) and (now is None or now.name != "applying"):
            raise
        log.warning(json.dumps({"repo": req.repo, "sha": req.after, "project": project.name, "error": str(exc)}))
        outcome = (
            await push_apply.settle(ctx, req, project, where, now)
            if now and now.name == "applying"
            else ApplyOutcome(Ending.FAILED)
        )
    record_outcome(ctx, req, project.name, outcome)
    ended = apply_phases.read(ctx.records, run_id)
    apply_phases.write(ctx.records, run_id, Phase("reported", outcome, detail=ended.detail if ended else ""))
    await dependents.release(ctx, req, project, outcome)
    return outcome.stored()


async def _run(
    ctx: WorkerContext, req: PushRequest, project: Project, where: ApplyConversation, run_id: str
) -> ApplyOutcome:
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        stepped_aside = await superseded.older_than_applied(ctx, gh, req, project)
        if stepped_aside is not None:
            return ApplyOutcome(stepped_aside)
        # The merged code's init and plan run before the gate has looked at them: with the plan phase's
        # credentials and host paths. Only `terraform apply` of the checked plan gets the apply's.
        plan_tf, tf = ctx.terraform(project.tool, "plan", merged=True), ctx.terraform(project.tool, "apply")
        token = await ctx.tokens.token(req.installation_id)
        policy = await base_config(gh, req.repo, policy_ref(req))  # invalid: nothing is applied ("failed")
        patterns = [*ctx.settings.mask_patterns, *policy.mask_patterns]
        scope, name, code = "push", project.name, project.destroy_from or req.after
        identity = functools.partial(ctx.identity, policy, project, repo=req.repo, repo_id=req.repo_id, sha=code)
        plan_tf = replace(plan_tf, oidc=identity("plan", ref=req.branch))
        with (
            run_records.recorded(ctx, _page(req, project, where, run_id), project, plan_tf.tool, patterns) as run,
            pipeline.checked_out(ctx.checkouts, req.repo_id, scope, code, name, req.clone_url, token) as dirs,
        ):
            assert run is not None
            saved = await asyncio.to_thread(pipeline.plan, run.streamed(plan_tf), project, dirs)
            decided = await apply_decision.decide(ctx, gh, req, project, where, policy, saved, patterns)
            run.learn_secrets(decided.plan.sensitive_values if decided.plan else ())
            shown = pipeline.result(project, req.after, plan_tf.tool, saved)
            if not project.apply_on_merge:
                applied_not = ("not applied", saved.plan is not None, "apply_on_merge is false")
                run.finish(*applied_not, shown, decided.gates, saved.source)
                return await _report_only(ctx, gh, req, project, where, decided, "apply_on_merge is false")
            if isinstance(decided.decision, Block):
                held = run_records.held(decided.decision, saved)
                run.finish(*held, result=shown, gated=decided.gates, source=saved.source)
                return await _block(ctx, gh, req, project, where, decided, run.id)
            if not isinstance(decided.decision, Apply):
                outcome, ok, _ = run_records.plan_outcome(shown)
                run.finish(outcome, ok, decided.decision.reason, shown, decided.gates, saved.source)
                return await _report_only(ctx, gh, req, project, where, decided, decided.decision.reason)
            approvers = tuple(sorted(decided.approved.approvers))
            tf = replace(tf, oidc=identity("apply", ref=req.branch, approvers=approvers))
            return await _apply(ctx, gh, req, project, where, decided, run.streamed(tf), dirs, run)


def _page(req: PushRequest, project: Project, where: ApplyConversation, job_id: str) -> run_records.Where:
    return run_records.Where("apply", job_id, req.repo, req.repo_id, req.after, where.number, project.destroy_from)


async def _block(
    ctx: WorkerContext,
    gh: GitHub,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    decided: Decided,
    page: str,
) -> ApplyOutcome:
    decision = decided.decision
    assert isinstance(decision, Block)
    unapproved = [decided.gates[key] for key in decision.unapproved]

    def body(number: int | None, is_pr: bool) -> str:
        """The comment; once `number` is known, headed by the held record it sealed for a Redis that
        loses it (none for an error: nothing can approve it)."""
        seal = None
        if number is not None and not decision.error:
            held = apply_store.hold(req, project, where, number, is_pr, unapproved)
            seal = apply_store.held_marker(held, ctx.records.marker_key)
        return render_blocked(
            project=project.name,
            dir=project.dir,
            sha=req.after,
            block=decision,
            plan=decided.plan,
            plan_text=decided.text,
            pr=where.number if where.is_pr else None,
            approved_on=where.approved_on,
            mask_patterns=decided.mask_patterns,
            revoked=decided.approved.revoked,
            gates=decided.gates,
            voided=decided.approved.voided,
            authors=decided.approved.authors,
            head=seal,
        )

    number, is_pr = where.number, where.is_pr
    if number is None:
        title = render_blocked_issue_title(req.after, project.name)
        issue = await vcs.open_issue(
            gh, ctx.records, repo=req.repo, repo_id=req.repo_id, title=title, body=body(None, False)
        )
        number, is_pr, comment_id, at = int(issue["number"]), False, None, issue.get("created_at")
        if not decision.error:  # its number is known now: the issue carries its sealed record too
            data = {"body": body(number, False)}
            await vcs.edit_issue(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=number, data=data)
    else:
        text = body(number, is_pr)
        comment = await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=number, body=text)
        comment_id, at = int(comment["id"]), comment.get("created_at")
    if not decision.error:
        held = apply_store.hold(req, project, where, number, is_pr, unapproved, comment_id, at)
        apply_store.save_blocked(ctx.records, held)
    audit.record(
        ctx.redis,
        "apply-blocked",
        repo=req.repo,
        sha=req.after,
        project=project.name,
        unapproved=len(decision.unapproved),
        error=decision.error,
    )
    _run_entry(ctx, req, project, number, decided, "blocked", page)
    return held_outcome(0 if decision.error else len(decision.unapproved), trusted=not decision.error)


async def _report_only(
    ctx: WorkerContext,
    gh: GitHub,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    decided: Decided,
    reason: str,
) -> ApplyOutcome:
    if where.number is not None:
        summary = summary_line(decided.plan) if decided.plan else "no plan"
        body = render_not_applied(project=project.name, sha=req.after, summary=summary, reason=reason)
        await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=where.number, body=body)
    return ApplyOutcome(Ending.NOOP if project.apply_on_merge else Ending.NOT_APPLIED)


async def _apply(
    ctx: WorkerContext,
    gh: GitHub,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    decided: Decided,
    tf: Terraform,
    dirs: pipeline.JobDirs,
    run: run_records.Run,
) -> ApplyOutcome:
    run_id = run.job_id
    apply_phases.write(ctx.records, run_id, Phase("applying"))
    step = await asyncio.to_thread(pipeline.apply, tf, project, dirs, decided.saved)
    ok = step.ok
    if ok:
        apply_store.set_applied(ctx.records, req.repo_id, project.identity, req.after)
        applied(ctx.records, req.repo_id, project.identity)
        blocked = apply_store.blocked_for_project(ctx.records, req.repo_id, project.identity)
        if blocked is not None and blocked.push.after == req.after:
            apply_store.clear_blocked(ctx.records, blocked)
    approvers = sorted(decided.approved.approvers)
    secrets = decided.plan.sensitive_values if decided.plan else ()
    body = render_apply_result(
        project=project.name,
        dir=project.dir,
        sha=req.after,
        ok=ok,
        output=step.output + ("\nSaved plan is stale: state moved since the plan." if step.stale_plan else ""),
        summary=summary_line(decided.plan) if decided.plan else "",
        approved_by=approvers,
        mask_patterns=decided.mask_patterns,
        secrets=secrets,
    )
    outcome = ApplyOutcome(Ending.APPLIED if ok else Ending.FAILED)
    detail = "" if ok else failure_detail(step.output, secrets, decided.mask_patterns)
    closes = ok and failed_applies.closes_on_success(ctx, req, where)
    done = Phase("applied", outcome, body, close_issue=closes, detail=detail)
    apply_phases.write(ctx.records, run_id, done)  # what happened is kept before anything is said
    shown = pipeline.result(project, req.after, tf.tool, decided.saved)
    summary = run_records.plan_outcome(shown)[2] if ok else run_records.failure_summary(step.failure())
    run.finish("applied" if ok else "apply failed", ok, summary, shown, decided.gates, decided.saved.source)
    audit.record(ctx.redis, "applied" if ok else "apply-failed", repo=req.repo, sha=req.after, project=project.name)
    _run_entry(ctx, req, project, where.number, decided, "applied" if ok else "apply failed", run.id, approvers)
    return await push_apply.settle(ctx, req, project, where, done, gh)


def _run_entry(
    ctx: WorkerContext,
    req: PushRequest,
    project: Project,
    number: int | None,
    decided: Decided,
    result: str,
    page: str,
    approvers: list[str] | None = None,
) -> None:
    record_run(
        ctx.redis,
        kind="apply",
        repo=req.repo,
        number=number,
        project=project.name,
        sha=req.after,
        summary=summary_line(decided.plan) if decided.plan else "plan failed",
        gate="success" if result == "applied" else "failure",
        approver=", ".join(approvers or []),
        result=result,
        run=page,
    )
