"""The gate's decision on an apply's fresh plan at the pushed SHA: its gated changes, the approvals that
still stand for them (re-checked against GitHub and the policy as it was before the push), and what
the gate decides."""

from __future__ import annotations

from dataclasses import dataclass

from core.change_rules import LIMIT_KEYS, MAX_DESTROYS, MAX_PROJECTS, limit_gate, project_gates, with_limits
from core.config import ChangeLimits, RepoConfig
from core.contract import ApplyConversation, PushRequest
from core.gate import Decision, decide_apply, unreadable
from core.gated import Gated
from core.plan import Plan
from core.projects import Project
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.authors import Authors, of_pull, of_push, record_unapplied, unapplied
from workers.adapters.github.pulls import get_pull
from workers.adapters.store import gates as gate_store
from workers.adapters.store import waiting_applies
from workers.adapters.terraform import pipeline
from workers.context import WorkerContext
from workers.flows.apply_approvals import Standing, standing


@dataclass(frozen=True)
class Decided:
    """The fresh plan at the pushed SHA, its gated changes and the gate's decision on them."""

    saved: pipeline.SavedPlan
    gates: dict[str, Gated]
    decision: Decision
    mask_patterns: list[str]
    approved: Standing

    @property
    def plan(self) -> Plan | None:
        return self.saved.plan

    @property
    def text(self) -> str:
        return self.saved.text


async def decide(
    ctx: WorkerContext,
    gh: GitHub,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    policy: RepoConfig,
    saved: pipeline.SavedPlan,
    patterns: list[str],
) -> Decided:
    """The gate on the plan just made: its gated changes against the approvals that still stand for them."""
    if saved.plan is None:
        return Decided(saved, {}, unreadable(saved.error or "no plan"), patterns, Standing(frozenset(), ()))
    gate_code = policy.gates_code(project.name, project.workspace, project.dir)
    judged = project_gates(saved.plan, saved.code_runs, gate_code=gate_code, rules=policy.rules)
    changed = [project.identity] if saved.plan.has_changes else []
    gates = with_limits({project.identity: judged}, changed, policy.change_limits)[project.identity]
    gates.update(_limits_of_the_pr(ctx, req, project, where, policy, gates) if changed else {})
    approved = await _approved(ctx, gh, req, project, where, policy, gates)
    return Decided(saved, gates, decide_apply(saved.plan, approved.keys, gates), patterns, approved)


def _limits_of_the_pr(
    ctx: WorkerContext,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    policy: RepoConfig,
    gates: dict[str, Gated],
) -> dict[str, Gated]:
    """The limits the merged PR's published plan was past in this project, bound to this plan: this job
    sees one project, so a limit only the PR's other projects took it past is known from the PR's record
    alone (core.change_rules). Without that whole plan (Redis lost the record, or a project's plan failed
    there, so it counted nothing) the others' part is unknown: every limit this project counts towards is
    held (fails closed; an approval of it on the PR still covers it). A direct push: `_limits_of_the_push`."""
    if policy.change_limits is None:
        return {}
    if not where.is_pr:
        return _limits_of_the_push(ctx, req, project, policy.change_limits, gates)
    if where.number is None or not where.approved_on:
        return {}
    record = gate_store.load_plan(ctx.records, req.repo_id, where.number, where.approved_on)
    if record is None or record.failed:
        unknown = f"the merged PR's plan at {where.approved_on[:7]} is not known whole: the limits cannot be counted"
        every = [limit_gate(key, policy.change_limits, project.identity, gates, unknown) for key in LIMIT_KEYS]
        return {found.key: found for found in every if found is not None and found.key not in gates}
    published = record.gates.get(project.identity, {})
    out: dict[str, Gated] = {}
    for key, gated in published.items():
        found = (
            limit_gate(key, policy.change_limits, project.identity, gates, gated.what)
            if gated.kind == "limit"
            else None
        )
        out.update({key: found} if found is not None and key not in gates else {})
    return out


def _limits_of_the_push(
    ctx: WorkerContext, req: PushRequest, project: Project, limits: ChangeLimits, gates: dict[str, Gated]
) -> dict[str, Gated]:
    """A direct push has no published plan: the projects it affects (kept at dispatch) are what is known
    of it. More than `max_projects` of them: the limit is held in each; more than one: the others'
    destroys are unknown, so `max_destroys` is held in each project with destroys (fails closed). No
    count kept (Redis lost it): the project alone decided."""
    affected = waiting_applies.order_at(ctx.records, req.repo_id, req.after)
    what = f"this push (no PR) applies {len(affected)} projects; their plans are judged one by one"
    found = [
        limit_gate(MAX_PROJECTS, limits, project.identity, gates, what)
        if limits.max_projects is not None and len(affected) > limits.max_projects
        else None,
        limit_gate(MAX_DESTROYS, limits, project.identity, gates, what) if len(affected) > 1 else None,
    ]
    return {g.key: g for g in found if g is not None and g.key not in gates}


async def _approved(
    ctx: WorkerContext,
    gh: GitHub,
    req: PushRequest,
    project: Project,
    where: ApplyConversation,
    policy: RepoConfig,
    gates: dict[str, Gated],
) -> Standing:
    """Gated keys approved on the merged PR's last head or on this blocked apply, for these very objects,
    by people who still qualify; nothing when there is nothing to approve (no request spent)."""
    if not gates:
        return Standing(frozenset(), ())
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    own = await _authors(ctx, gh, req, where, policy)
    authors = own.merged(unapplied(ctx.records, req.repo_id, project.identity))
    if project.apply_on_merge:  # a report-only project is never applied: its authors are not held over
        record_unapplied(ctx.records, req.repo_id, project.identity, own)  # until an apply of it succeeds
    return await standing(
        ctx.records,
        gh,
        repo=req.repo,
        repo_id=req.repo_id,
        number=where.number,
        shas=tuple(s for s in dict.fromkeys((where.approved_on, req.after)) if s),
        identity=project.identity,
        gates=gates,
        bot_login=login,
        authors=authors,
        policy=policy.destroy_approvers,
        rules=policy.rules,
    )


async def _authors(
    ctx: WorkerContext, gh: GitHub, req: PushRequest, where: ApplyConversation, policy: RepoConfig
) -> Authors:
    """The merged PR's authors as GitHub shows them now (opener, pushers, committers); a direct push's
    pusher and committers."""
    if not where.is_pr or where.number is None:
        return of_push(where.authors)
    pull = await get_pull(gh, req.repo, where.number)
    trusted = policy.destroy_approvers.trusted_bots
    return await of_pull(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, pull=pull, trusted_bots=trusted)
