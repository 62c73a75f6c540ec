"""`/accept-drift` in a drift issue: record what changed outside Terraform as the new state, nothing else.

The command job only decides (`decide`): the issue must be a drift issue plangate watches, and the
commenter must be allowed to approve destroys under the default branch's `destroy_approvers`. Nobody
authored drift (it was made outside Terraform, by whoever or whatever), and accepting it applies no
code, so no one is excluded as "the author" here: bots never are allowed, as for every approval.

The job (`run`, in the project's RateLimit slot like its applies and drift checks) plans
`terraform plan -refresh-only -out=…` of the project at the apply branch's head, with the plan phase's
credentials as a merge's plan has, checks the saved plan (core/drift_accept.py: no resource action,
no code run, nothing errored), and applies exactly that plan file with the apply phase's credentials.
Phases are recorded as for a merge's apply (workers.adapters.store.apply_phases): a run taken up again
after its worker died plans afresh when nothing was applied, and reports the loss when it died during
`terraform apply`, never applying twice. A drift check follows every outcome: it closes the issue when
it finds no drift.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from dataclasses import replace

from core.apply_outcome import ApplyOutcome, Ending
from core.config import ConfigError
from core.contract import CommandRequest
from core.drift_accept import refresh_only_refusal
from core.drift_schedule import DriftTarget
from core.plan import Plan
from core.projects import Project
from core.render.accept_drift import COMMAND, Result, render_accept_result, render_accepting
from core.render.drift import drifted
from core.render.replies import render_not_allowed, render_refusal
from plumbing.runlog import record_run
from workers.adapters.checkout import remote_head
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.authors import Authors
from workers.adapters.github.client import outage
from workers.adapters.github.permissions import may_approve
from workers.adapters.github.repo_config import base_config
from workers.adapters.queue import follow_ups
from workers.adapters.store import apply_phases, audit, drift_issues
from workers.adapters.store.apply_phases import Phase
from workers.adapters.terraform import pipeline
from workers.context import WorkerContext
from workers.flows import run_records
from workers.flows.outcome import Outcome

log = logging.getLogger("plangate.accept_drift")

NOT_HERE = (
    "works only in an open drift issue plangate opened (label `plangate:drift`), where it accepts that "
    "issue's project; it changes no infrastructure"
)
_ENDINGS: dict[Result, Ending] = {
    "accepted": Ending.APPLIED,
    "nothing": Ending.NOOP,
    "refused": Ending.NOT_APPLIED,
    "failed": Ending.FAILED,
    "lost": Ending.ERROR,
}


async def decide(ctx: WorkerContext, gh: GitHub, req: CommandRequest) -> Outcome:
    """The command's answer: refused, not allowed, or accepted for the job to carry out."""
    watched = None if req.is_pr else drift_issues.watched(ctx.redis, req.repo_id, req.number)
    if watched is None:
        return Outcome(render_refusal(NOT_HERE, command=COMMAND, reply_to=req.comment_id), "confused")
    try:
        policy = await base_config(gh, req.repo, req.default_branch)
    except ConfigError as exc:
        reason = f"the default branch's .plangate.yml is invalid ({exc}); fix it first"
        return Outcome(render_refusal(reason, command=COMMAND, reply_to=req.comment_id), "confused")
    allowed = await may_approve(
        gh,
        repo=req.repo,
        login=req.commenter,
        user_type=req.commenter_type,
        authors=Authors(),
        policy=policy.destroy_approvers,
    )
    where = {"repo": req.repo, "issue": req.number, "by": req.commenter}
    if not allowed.allowed:
        audit.record(ctx.redis, "accept-drift-refused", reason=allowed.reason, **where)
        return Outcome(
            render_not_allowed(req.commenter, allowed.reason, command=COMMAND, reply_to=req.comment_id), "-1"
        )
    project = Project.from_plain(watched["project"])
    if not project.apply_on_merge:
        reason = f"`{project.name}` has `apply_on_merge: false`: plangate never writes its state"
        return Outcome(render_refusal(reason, command=COMMAND, reply_to=req.comment_id), "confused")
    target = replace(DriftTarget.from_plain(watched["target"]), project=project.name)
    audit.record(ctx.redis, "accept-drift-allowed", project=project.name, **where)
    reply = render_accepting(
        project=project.name,
        branch=policy.apply_branch or target.default_branch,
        login=req.commenter,
        reply_to=req.comment_id,
    )
    return Outcome(reply, "+1", accept=(target, project))


async def run(ctx: WorkerContext, req: CommandRequest, target: DriftTarget, project: Project, run_id: str) -> str:
    """The job body (`run_id`: its RQ job): the outcome, as an apply's is stored."""
    phase = apply_phases.read(ctx.records, run_id)
    if phase is not None and phase.name == "reported" and phase.outcome is not None:
        return phase.outcome.stored()
    try:
        if phase is None or phase.name == "planning":
            apply_phases.write(ctx.records, run_id, Phase("planning"))
            phase = await _accept(ctx, req, target, project, run_id)
        elif phase.name == "applying":
            phase = _lost(ctx, req, target, project, run_id)
    except Exception as exc:
        now = apply_phases.read(ctx.records, run_id)
        if outage(exc) and (now is None or now.name != "applying"):
            raise
        log.warning(json.dumps({"repo": req.repo, "issue": req.number, "project": project.name, "error": str(exc)}))
        if now is not None and now.name == "applied":
            phase = now
        elif now is not None and now.name == "applying":
            phase = _lost(ctx, req, target, project, run_id)
        else:
            at, reason = f"the head of {target.default_branch}", f"{type(exc).__name__}: {exc}"
            phase = _done(ctx, run_id, "failed", project, at, reason=reason, req=req)
    return await _settle(ctx, req, target, run_id, phase)


async def _accept(ctx: WorkerContext, req: CommandRequest, target: DriftTarget, project: Project, run_id: str) -> Phase:
    token = await ctx.tokens.token(target.installation_id)
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        policy = await base_config(gh, req.repo, req.default_branch)
    # The code plangate applies (and so the state's code): the apply branch's, never the default branch's
    # when they differ (another region or provider there would read this state's resources as gone).
    branch = policy.apply_branch or target.default_branch
    sha = await asyncio.to_thread(remote_head, target.clone_url, branch, token, timeout=60)
    patterns = [*ctx.settings.mask_patterns, *policy.mask_patterns]
    # As a merge's apply: the code's init and plan with the plan phase's credentials, only `terraform
    # apply` of the checked plan file with the apply phase's.
    identity = functools.partial(ctx.identity, policy, project, repo=req.repo, repo_id=req.repo_id, sha=sha, ref=branch)
    plan_tf = replace(ctx.terraform(project.tool, "plan", merged=True), oidc=identity("plan"))
    tf = replace(ctx.terraform(project.tool, "apply"), oidc=identity("apply", approvers=(req.commenter,)))
    scope, page = "accept-drift", run_records.Where("accept-drift", run_id, req.repo, req.repo_id, sha, req.number)
    with (
        run_records.recorded(ctx, page, project, plan_tf.tool, patterns) as run,
        pipeline.checked_out(ctx.checkouts, req.repo_id, scope, sha, project.name, target.clone_url, token) as dirs,
    ):
        assert run is not None
        saved = await asyncio.to_thread(pipeline.plan, run.streamed(plan_tf), project, dirs, refresh_only=True)
        shown = pipeline.result(project, sha, plan_tf.tool, saved)
        if saved.plan is None:
            reason = (saved.error or "the refresh-only plan failed").splitlines()[0]
            run.finish("plan failed", False, reason, shown, source=saved.source)
            return _done(
                ctx, run_id, "failed", project, sha, reason=reason, output=saved.text, patterns=patterns, req=req
            )
        refusal = refresh_only_refusal(saved.plan, saved.code_runs)
        if refusal is not None:
            audit.record(ctx.redis, "accept-drift-unsafe", repo=req.repo, project=project.name, reason=refusal)
            run.finish("refused", False, refusal, shown, source=saved.source)
            return _done(
                ctx, run_id, "refused", project, sha, reason=refusal, plan=saved.plan, patterns=patterns, req=req
            )
        if not drifted(saved.plan):
            run.finish("no drift", True, "nothing to accept", shown, source=saved.source)
            return _done(ctx, run_id, "nothing", project, sha, plan=saved.plan, patterns=patterns, req=req)
        run.learn_secrets(saved.plan.sensitive_values)
        apply_phases.write(ctx.records, run_id, Phase("applying"))
        step = await asyncio.to_thread(pipeline.apply, run.streamed(tf), project, dirs, saved)
        summary = "drift accepted into the state" if step.ok else run_records.failure_summary(step.failure())
        run.finish("accepted" if step.ok else "apply failed", step.ok, summary, shown, source=saved.source)
    audit.record(ctx.redis, "drift-accepted" if step.ok else "accept-drift-failed", repo=req.repo, project=project.name)
    if step.ok:
        return _done(ctx, run_id, "accepted", project, sha, plan=saved.plan, patterns=patterns, req=req)
    reason = "terraform apply of the refresh-only plan failed" + (
        " (the state moved since the plan)" if step.stale_plan else ""
    )
    return _done(
        ctx,
        run_id,
        "failed",
        project,
        sha,
        reason=reason,
        plan=saved.plan,
        output=step.output,
        patterns=patterns,
        req=req,
    )


def _lost(ctx: WorkerContext, req: CommandRequest, target: DriftTarget, project: Project, run_id: str) -> Phase:
    """The worker died during `terraform apply`: said, never run again."""
    audit.record(ctx.redis, "accept-drift-lost", repo=req.repo, project=project.name)
    run_records.died(ctx, run_id, project, "the worker died during terraform apply; it is not run again")
    return _done(ctx, run_id, "lost", project, f"the head of {target.default_branch}", req=req)


def _done(
    ctx: WorkerContext,
    run_id: str,
    result: Result,
    project: Project,
    sha: str,
    *,
    req: CommandRequest,
    reason: str = "",
    plan: Plan | None = None,
    output: str = "",
    patterns: list[str] | None = None,
) -> Phase:
    """The outcome and its reply, recorded before anything is said."""
    body = render_accept_result(
        project=project.name,
        sha=sha,
        result=result,
        plan=plan,
        reason=reason,
        output=output,
        mask_patterns=patterns or list(ctx.settings.mask_patterns),
        reply_to=req.comment_id,
    )
    phase = Phase("applied", ApplyOutcome(_ENDINGS[result]), body)
    apply_phases.write(ctx.records, run_id, phase)
    page = run_records.page_of(ctx, run_id, project)
    record_run(
        ctx.redis,
        kind="accept-drift",
        repo=req.repo,
        number=req.number,
        project=project.name,
        sha=sha,
        summary=result,
        gate="success" if result in ("accepted", "nothing") else "failure",
        approver=req.commenter,
        result=result,
        **({"run": page} if page is not None else {}),
    )
    return phase


async def _settle(ctx: WorkerContext, req: CommandRequest, target: DriftTarget, run_id: str, phase: Phase) -> str:
    """Post the recorded reply, mark the run reported, and check the drift again (which closes the issue
    when it is clean)."""
    outcome = phase.outcome or ApplyOutcome(Ending.FAILED)
    if phase.name == "applied":
        async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
            await vcs.post_comment(
                gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.number, body=phase.body
            )
        apply_phases.write(ctx.records, run_id, Phase("reported", outcome))
        follow_ups.check_drift(ctx.redis, target)
    return outcome.stored()
