"""GitHub's merge queue: plan the group's temporary commit and gate it on its pull requests' approvals.

A merge group is the base branch plus the queued PRs merged in order; what lands is that commit, not
any PR's head. So the group's projects are planned at `merge_group.head_sha`, and `plangate/destroy`
there passes only when every destroy is covered by an approval given on one of the group's PRs (an
approval names exact project identities and destroy keys, at that PR's head), by someone who still
qualifies, under the default branch's destroy rules. Nothing is applied here: the apply happens on
the push to the apply branch, as for any merge. A group the queue dropped publishes nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from core import redis_keys
from core.approvals import OBJECT_LEN, Approval
from core.config import ConfigError, RepoConfig
from core.contract import DESTROY_CONTEXT, PLAN_CONTEXT, GroupRequest
from core.destroy_rules import rule_coverage
from core.gated import Gated
from core.project_limit import over_limit
from core.projects import Project
from core.render.plan import render_plan_comments
from core.render.replies import approval_status
from core.render.status import destroy_status, pending_status, plan_status
from core.results import ProjectResult
from workers.adapters.checkout import remote_head
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.authors import of_pull, unapplied
from workers.adapters.github.commits import compare
from workers.adapters.github.pulls import pulls_of_commit
from workers.adapters.github.repo_config import base_config
from workers.adapters.store import merge_groups
from workers.context import WorkerContext
from workers.flows.apply_approvals import standing
from workers.flows.discovery import discover_at, to_plan
from workers.flows.gate_check import gates_of

log = logging.getLogger("plangate.merge_queue")
COMPARE_FILE_CAP = 300


@dataclass(frozen=True)
class GroupPR:
    number: int
    head_sha: str
    pull: dict[str, Any]  # GitHub's pull object: its authors are asked of GitHub from it


def gone(ctx: WorkerContext, req: GroupRequest) -> bool:
    """The queue dropped this group (merged, invalidated, dequeued): its results matter to no one."""
    return merge_groups.is_gone(ctx.redis, req.repo_id, req.head_sha)


async def dispatch(ctx: WorkerContext, req: GroupRequest) -> list[Project] | None:
    """Mark the group's commit pending and find the projects it changes; None: nothing to plan."""
    if gone(ctx, req):
        return None
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        token = await ctx.tokens.token(req.installation_id)
        base = req.base_sha or await _base(ctx, req)
        await vcs.set_status(gh, req.repo, req.head_sha, PLAN_CONTEXT, *pending_status(0))
        changed = await _changed(gh, req.repo, base, req.head_sha)
        try:
            found = await discover_at(ctx.checkouts, req, "merge-group", req.head_sha, token, changed)
            policy = await base_config(gh, req.repo, req.default_branch)
        except ConfigError as exc:
            await _failed(gh, req, f"invalid .plangate.yml: {exc.key}")
            return None
        projects = await to_plan(ctx.checkouts, req, token, found, changed, scope="merge-group", base=base)
        too_many = over_limit(len(projects), ctx.settings.max_projects, policy)
        if too_many is not None:  # the group would reach the apply branch unplanned: it does not pass
            await _failed(gh, req, too_many.status)
            return None
        if not projects:
            await vcs.set_status(gh, req.repo, req.head_sha, PLAN_CONTEXT, "success", "no Terraform project affected")
            await vcs.set_status(gh, req.repo, req.head_sha, DESTROY_CONTEXT, "success", "no destroys")
            return None
    _remember_masks(ctx, req, policy)
    return projects


def _remember_masks(ctx: WorkerContext, req: GroupRequest, policy: RepoConfig) -> None:
    """The default branch's mask patterns, for the group's plan jobs to mask their run pages' output
    (workers.flows.run_records.plan_masks), kept as a PR's dispatch keeps them."""
    plan = req.as_plan()
    meta = json.dumps({"mask_patterns": list(policy.mask_patterns)})
    ctx.records.set(redis_keys.plan_meta(plan.repo_id, plan.pr, plan.sha), meta, ex=redis_keys.PLAN_META_TTL)


async def _base(ctx: WorkerContext, req: GroupRequest) -> str:
    """The base branch's head the group was built on (a Re-run carries no base SHA)."""
    token = await ctx.tokens.token(req.installation_id)
    return await asyncio.to_thread(remote_head, req.clone_url, req.default_branch, token, timeout=60)


async def _changed(gh: GitHub, repo: str, base: str, head: str) -> list[str] | None:
    files = (await compare(gh, repo, base, head)).get("files", [])
    if len(files) >= COMPARE_FILE_CAP:
        return None
    return [f["filename"] for f in files] + [f["previous_filename"] for f in files if f.get("previous_filename")]


async def group_prs(gh: GitHub, repo: str, base: str, head: str) -> list[GroupPR]:
    """The pull requests merged into the group: those whose head is one of the group's commits."""
    compared = await compare(gh, repo, base, head)
    found: dict[int, GroupPR] = {}
    for commit in compared.get("commits", []):
        sha = str(commit["sha"])
        async for pull in pulls_of_commit(gh, repo, sha):
            if pull["head"]["sha"] == sha and pull.get("state") == "open":
                found[int(pull["number"])] = GroupPR(int(pull["number"]), sha, pull)
    return sorted(found.values(), key=lambda p: p.number)


async def publish(ctx: WorkerContext, req: GroupRequest, results: list[ProjectResult]) -> None:
    """plangate/plan and plangate/destroy on the group's commit, the destroy gate from its PRs' approvals."""
    if gone(ctx, req):
        log.info(json.dumps({"repo": req.repo, "merge_group": req.head_ref, "outcome": "dropped by the queue"}))
        return
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        try:
            policy = await base_config(gh, req.repo, req.default_branch)
        except ConfigError as exc:  # its masks and rules are unknown: nothing of the plans is shown, nothing passes
            await _failed(gh, req, f"invalid .plangate.yml on {req.default_branch}: {exc.key}")
            return
        gates = gates_of(results, policy)
        masks = [*ctx.settings.mask_patterns, *policy.mask_patterns]
        bodies = render_plan_comments(results, pr=0, sha=req.head_sha, mask_patterns=masks, gates=gates)
        summary = bodies[0].partition("\n")[2]
        await vcs.set_status(gh, req.repo, req.head_sha, PLAN_CONTEXT, *plan_status(results), summary=summary)
        if any(r.plan is None for r in results) or not any(gates.values()):
            await vcs.set_status(gh, req.repo, req.head_sha, DESTROY_CONTEXT, *destroy_status(results), summary=summary)
            return
        approvals = await _approvals(ctx, gh, req, gates, policy)
        rules = policy.rules
        cov = rule_coverage(gates, approvals, sha=req.head_sha, rules=rules, eligible=_all_rules(approvals, rules))
        await vcs.set_status(gh, req.repo, req.head_sha, DESTROY_CONTEXT, *approval_status(cov), summary=summary)


async def _failed(gh: GitHub, req: GroupRequest, why: str) -> None:
    for context in (PLAN_CONTEXT, DESTROY_CONTEXT):
        await vcs.set_status(gh, req.repo, req.head_sha, context, "failure", why)


def _all_rules(approvals: list[Approval], rules: tuple[object, ...]) -> dict[str, frozenset[int]]:
    """Approvals here already passed the narrowed rules' checks (see `_approvals`): count them for all."""
    return {a.approver: frozenset(range(len(rules))) for a in approvals}


async def _approvals(
    ctx: WorkerContext, gh: GitHub, req: GroupRequest, gates: dict[str, dict[str, Gated]], policy: RepoConfig
) -> list[Approval]:
    """Per project, the approvals on the group's PRs that still count (re-checked as at apply time, against
    every author of that PR and the objects the group's plan condemns), as approvals of the group's
    commit: the gated changes they cover, whoever gave them."""
    base = req.base_sha or await _base(ctx, req)
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    found: list[Approval] = []
    for pr in await group_prs(gh, req.repo, base, req.head_sha):
        trusted = policy.destroy_approvers.trusted_bots
        of_pr = await of_pull(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, pull=pr.pull, trusted_bots=trusted)
        for identity, gated in gates.items():
            if not gated:
                continue
            authors = of_pr.merged(unapplied(ctx.records, req.repo_id, identity))
            counted = await standing(
                ctx.records,
                gh,
                repo=req.repo,
                repo_id=req.repo_id,
                number=pr.number,
                shas=(pr.head_sha,),
                identity=identity,
                gates=gated,
                bot_login=login,
                authors=authors,
                policy=policy.destroy_approvers,
                rules=policy.rules,
            )
            seen = frozenset((identity, key, gated[key].object[:OBJECT_LEN]) for key in counted.keys)
            found += [Approval(approver, req.head_sha, seen) for approver in counted.approvers]
    return found
