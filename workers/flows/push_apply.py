"""Apply on merge: a push to the default branch → per project, a fresh plan → gate → apply or block.

Whatever way the commit arrived (merge, squash, rebase, direct push), the plan is made at the
pushed SHA, the decision is taken on the JSON of that saved plan, and that saved plan file is
what gets applied, in the same job. Destroys apply only when every one is covered by an
approval: on the merged PR's last head SHA, or on the blocked apply itself.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.apply_outcome import ApplyOutcome, Ending
from core.config import ConfigError, RepoConfig
from core.contract import APPLY_CONTEXT, ApplyConversation, PushRequest
from core.project_limit import over_limit
from core.project_order import merge_waits
from core.projects import Project
from core.render.apply import render_apply_died
from core.render.apply_status import apply_pending
from core.render.lost import KILLED, render_apply_lost, why_text
from core.render.plan import render_config_error, render_too_many_projects
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.commits import compare
from workers.adapters.github.issues import close_issue
from workers.adapters.github.pulls import pulls_of_commit
from workers.adapters.github.repo_config import base_config, policy_ref
from workers.adapters.queue import fanout, follow_ups
from workers.adapters.store import applies as apply_store
from workers.adapters.store import apply_outcomes, apply_phases, audit, pr_plans, waiting_applies
from workers.adapters.store.apply_phases import Phase
from workers.adapters.store.pr_plans import PlannedPR
from workers.context import WorkerContext
from workers.flows import failed_applies, stale_plans
from workers.flows.discovery import discover_at, to_plan

log = logging.getLogger("plangate.apply")
ZERO_SHA = "0" * 40
COMPARE_FILE_CAP = 300  # GitHub's compare API lists at most 300 files


@dataclass(frozen=True)
class MergedPR:
    number: int
    head_sha: str  # the PR's last head: where its approvals were given
    author: str


@dataclass(frozen=True)
class AppliesToRun:
    projects: list[Project]
    pr: MergedPR | None
    replans: list[PlannedPR]  # open PRs planned against the code this push replaced: plan them on the merge
    waits: dict[str, tuple[str, ...]]  # project → those applied before it (core.apply_order)

    def where(self, req: PushRequest) -> ApplyConversation:
        """Where the applies talk to humans (the merged PR, else an issue later) and who may not approve."""
        pr = self.pr
        if pr is None:
            return ApplyConversation(number=None, is_pr=False, authors=req.authors, approved_on=None)
        return ApplyConversation(number=pr.number, is_pr=True, authors=(pr.author,), approved_on=pr.head_sha)


async def run(ctx: WorkerContext, req: PushRequest) -> list[str]:
    """A push to the apply branch: the stale PRs' re-plans, one apply job per affected project, then the
    finish job; the apply jobs' ids. GitHub is only asked before anything is enqueued, so an outage
    brings the whole dispatch back."""
    found = await dispatch(ctx, req)
    if found is None:
        return []
    fanout.enqueue_replans(ctx.redis, req, found.replans)
    # every affected project: for an apply run again without it (workers.flows.apply_project), and the
    # count a direct push's limits are judged by (workers.flows.apply_decision)
    waiting_applies.save_order(ctx.records, req.repo_id, req.after, found.waits)
    where, timeout = found.where(req), ctx.settings.tf_timeout
    return fanout.enqueue_applies(ctx.redis, req, found.projects, where, timeout, waits=found.waits)


async def dispatch(ctx: WorkerContext, req: PushRequest) -> AppliesToRun | None:
    """Mark the SHA pending and find the affected projects and the merged PR; None: nothing to do."""
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        policy = await _apply_policy(gh, req)
        if policy is None:
            return None
        pr = await merged_pr(gh, req.repo, req.after)
        changed = await _changed(gh, req)
        token = await ctx.tokens.token(req.installation_id)
        try:
            found = await discover_at(ctx.checkouts, req, "push", req.after, token, changed)
        except ConfigError as exc:
            await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, "failure", f"invalid .plangate.yml: {exc.key}")
            if pr is not None:
                body = render_config_error(exc.key, exc.problem)
                await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=pr.number, body=body)
            return None
        base = "" if req.forced or req.before == ZERO_SHA else req.before
        projects = await to_plan(ctx.checkouts, req, token, found, changed, scope="push", base=base)
        if not projects:
            await vcs.set_status(
                gh, req.repo, req.after, APPLY_CONTEXT, *failed_applies.no_project_status(ctx, req.repo_id)
            )
            return None
        too_many = over_limit(len(projects), ctx.settings.max_projects, policy)
        if too_many is not None:  # refused whole: nothing of the push is applied
            await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, "failure", too_many.status)
            if pr is not None:
                body = render_too_many_projects(too_many)
                await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=pr.number, body=body)
            return None
        waits = await _order(ctx, gh, req, policy, projects, pr)
        if waits is None:
            return None
        await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, *apply_pending(len(projects)))
        replans = await _stale(ctx, gh, req, projects, pr) if policy.replan_on_base_change else []
    return AppliesToRun(projects, pr, replans, waits)


async def _order(
    ctx: WorkerContext, gh: GitHub, req: PushRequest, policy: RepoConfig, projects: list[Project], pr: MergedPR | None
) -> dict[str, tuple[str, ...]] | None:
    """The order of the applies, from the policy that judges them (the default branch before the push, as
    the PR's plan comment said it); None, with the push marked failed, when it cannot be had: then
    nothing is applied rather than applied out of order."""
    ref = policy_ref(req)
    try:
        judging = policy if ref == req.default_branch else await base_config(gh, req.repo, ref)
        return merge_waits(judging, projects)
    except (ConfigError, ValueError) as exc:  # a deleted project's old order can loop with the policy's
        key, problem = (exc.key, exc.problem) if isinstance(exc, ConfigError) else ("depends_on", str(exc))
        await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, "failure", f"invalid .plangate.yml: {key}")
        if pr is not None:
            body = render_config_error(key, problem)
            await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=pr.number, body=body)
        return None


async def _apply_policy(gh: GitHub, req: PushRequest) -> RepoConfig | None:
    """The default branch's config when this push is to its `apply_branch` (the default branch itself
    when unset); None otherwise. An unreadable config applies nothing: the push is marked failed."""
    try:
        config = await base_config(gh, req.repo, req.default_branch)
    except ConfigError as exc:
        if req.branch == req.default_branch:
            await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, "failure", f"invalid .plangate.yml: {exc.key}")
        return None
    return config if req.branch == (config.apply_branch or req.default_branch) else None


async def _stale(
    ctx: WorkerContext, gh: GitHub, req: PushRequest, projects: list[Project], merged: MergedPR | None
) -> list[PlannedPR]:
    """Mark the plans of open PRs on the same projects stale; those with no re-plan pending get one."""
    identities = {p.identity for p in projects}
    prs = pr_plans.affected(ctx.records, req.repo_id, identities, merged.number if merged else None)
    note = stale_plans.stale_note(req.after, req.branch)
    for planned in prs:
        comment_id = vcs.known_comment(ctx.records, req.repo_id, planned.number, "plan")
        if comment_id is not None:
            await stale_plans.mark_stale(
                gh,
                ctx.records,
                repo=req.repo,
                repo_id=req.repo_id,
                number=planned.number,
                comment_id=comment_id,
                note=note,
            )
    return [p for p in prs if pr_plans.claim(ctx.redis, req.repo_id, p.number)]


async def merged_pr(gh: GitHub, repo: str, sha: str) -> MergedPR | None:
    """The PR this commit merged (merge commit, squash, rebase, or fast-forward of its head), if any.
    Only the PR whose merge is this very commit: a commit merely associated with a merged PR (pushed to
    its branch after the merge) is a direct push, judged against its pusher and committers."""
    candidates = [p async for p in pulls_of_commit(gh, repo, sha)]
    merged = [p for p in candidates if p.get("merged_at")]
    exact = [p for p in merged if sha in (p.get("merge_commit_sha"), p["head"]["sha"])]
    chosen = exact[0] if exact else None
    if chosen is None:
        return None
    return MergedPR(int(chosen["number"]), str(chosen["head"]["sha"]), str(chosen["user"]["login"]))


async def _changed(gh: GitHub, req: PushRequest) -> list[str] | None:
    """Files changed by the push; None (plan every project) for a new branch or a force push."""
    if req.forced or req.before == ZERO_SHA:
        return None
    compared = await compare(gh, req.repo, req.before, req.after)
    if compared.get("status") not in ("ahead", "identical"):
        return None
    files = [f["filename"] for f in compared.get("files", [])]
    files += [f["previous_filename"] for f in compared.get("files", []) if f.get("previous_filename")]
    return None if len(compared.get("files", [])) >= COMPARE_FILE_CAP else files


def record_outcome(ctx: WorkerContext, req: PushRequest, project: str, outcome: ApplyOutcome) -> None:
    apply_outcomes.record(ctx.redis, req.repo_id, req.after, project, outcome)


def outcomes(ctx: WorkerContext, req: PushRequest) -> dict[str, ApplyOutcome]:
    return apply_outcomes.read(ctx.redis, req.repo_id, req.after)


async def finish_runs(ctx: WorkerContext, req: PushRequest, job_ids: Sequence[str], where: ApplyConversation) -> None:
    """Runs that ended without reporting (killed on every try, or stopped by an outage) are settled from
    their recorded phase; then `plangate/apply` from every project's outcome at the SHA."""
    runs = follow_ups.apply_runs(ctx.redis, job_ids)
    phases = apply_phases.read_many(ctx.records, list(job_ids))
    unsettled = [
        (run.project, phase, run.gave_up or KILLED)
        for run, phase in zip(runs, phases, strict=True)
        if not run.finished and (phase is None or phase.name != "reported")
    ]
    details = {run.project.name: phase.detail for run, phase in zip(runs, phases, strict=True) if phase is not None}
    await finish(ctx, req, where, unsettled, [run.project for run in runs], details)


async def finish(
    ctx: WorkerContext,
    req: PushRequest,
    where: ApplyConversation,
    unsettled: Sequence[tuple[Project, Phase | None, str]],
    projects: Sequence[Project],
    details: Mapping[str, str] | None = None,
) -> None:
    """`plangate/apply` on the pushed SHA from every project's outcome, once the runs that ended without
    reporting (`unsettled`: killed on every try, or stopped by an outage; why) are settled from their
    phase. A project with no outcome (Redis lost it) is an error: whether it applied is unknown. Each
    failure (`details`: its output) is kept in sight until an apply of its project succeeds."""
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        for project, phase, why in unsettled:
            record_outcome(ctx, req, project.name, await settle(ctx, req, project, where, phase, gh, why=why))
        known = {**dict.fromkeys((p.name for p in projects), ApplyOutcome(Ending.ERROR)), **outcomes(ctx, req)}
        state = await failed_applies.after_apply(ctx, gh, req, where, projects, known, details or {})
        await vcs.set_status(gh, req.repo, req.after, APPLY_CONTEXT, *state)


async def settle(
    ctx: WorkerContext,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    phase: Phase | None,
    gh: GitHub | None = None,
    *,
    why: str = KILLED,
) -> ApplyOutcome:
    """Report a project's run from its recorded phase; its outcome. Applied: the outcome it had.
    Applying: it died during `terraform apply` (check the state). Before that: nothing was applied.
    The last two are held, so that `/plan` on the PR (or the issue opened for it) runs them again."""
    if gh is None:
        async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as client:
            return await settle(ctx, req, project, where, phase, client, why=why)
    if phase is not None and phase.outcome is not None and phase.name in ("applied", "reported"):
        if phase.name == "applied" and where.number is not None:
            body = phase.body
            await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=where.number, body=body)
            if phase.close_issue:
                await close_issue(gh, req.repo, where.number)
        return phase.outcome
    died = phase is not None and phase.name == "applying"
    if died:
        body = render_apply_died(project=project.name, sha=req.after)
    else:
        said = why_text(why, outage_seconds=ctx.settings.outage_window)
        body = render_apply_lost(sha=req.after, why_said=said, projects=[project.name])
    number, is_pr = where.number, where.is_pr
    if number is None:
        title = f"plangate: apply {'died' if died else 'lost'} on {req.after[:7]} ({project.name})"
        issue = await vcs.open_issue(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, title=title, body=body)
        number, is_pr = int(issue["number"]), False
    else:
        await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=number, body=body)
    apply_store.save_blocked(ctx.records, apply_store.hold(req, project, where, number, is_pr, []))
    audit.record(ctx.redis, "apply-failed", repo=req.repo, sha=req.after, project=project.name, died=died)
    return ApplyOutcome(Ending.ERROR if died else Ending.LOST)
